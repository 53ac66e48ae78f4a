package openapi

// A description's security schemes say what each operation needs; the
// backend's config says what the gateway sends (its credentials and
// add_headers, through the gateway's one credentials machinery). At
// start-up each selected operation must be satisfiable by one of its
// alternatives, or the description is refused naming the scheme. At call
// time nothing is chosen: the backend's headers go with every request as
// for any backend, except the API keys a scheme sends in the query, which
// leave the headers for the query of the operations that use them.

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Credentials is what a backend's config sends with each request.
type Credentials struct {
	// Bearer: a token grant (token_exchange, client_credentials,
	// user_oauth) sets Authorization: Bearer.
	Bearer bool
	// Headers are the names add_headers sets (values or claim templates).
	Headers []string
}

func (c Credentials) has(header string) bool {
	k := http.CanonicalHeaderKey(header)
	for _, h := range c.Headers {
		if http.CanonicalHeaderKey(h) == k {
			return true
		}
	}
	return false
}

// satisfied says whether the config satisfies one scheme, and if not,
// what it would take.
func (c Credentials) satisfied(s *openapi3.SecurityScheme) (bool, string) {
	switch strings.ToLower(s.Type) {
	case "http":
		if strings.EqualFold(s.Scheme, "bearer") {
			return c.Bearer || c.has("Authorization"), "credentials (a token grant) or add_headers Authorization"
		}
		return c.has("Authorization"), fmt.Sprintf("add_headers Authorization (%s)", s.Scheme)
	case "oauth2", "openidconnect":
		return c.Bearer || c.has("Authorization"), "credentials (token_exchange, client_credentials or user_oauth) or add_headers Authorization"
	case "apikey":
		switch s.In {
		case "header":
			return c.has(s.Name), fmt.Sprintf("add_headers %s", s.Name)
		case "query":
			return c.has(s.Name), fmt.Sprintf("add_headers %s (sent as the query parameter %s)", s.Name, s.Name)
		case "cookie":
			return c.has("Cookie"), fmt.Sprintf("add_headers Cookie (%s=...)", s.Name)
		}
		return false, fmt.Sprintf("an API key in %q, which is not supported", s.In)
	}
	return false, fmt.Sprintf("a %s scheme, which the gateway cannot send", s.Type)
}

// securityCheck collects, for the selected operations, the schemes the
// config does not satisfy, to report them together.
type securityCheck struct {
	doc   *openapi3.T
	creds Credentials
	// unmet: scheme name -> what it takes, and the operations that need it
	unmet map[string]*unmetScheme
}

type unmetScheme struct {
	takes string
	ops   []string
}

// operation checks one operation's requirements and returns the query
// API keys it sends (their config header -> query parameter).
func (sc *securityCheck) operation(op *openapi3.Operation, label string) map[string]string {
	reqs := sc.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 {
		return nil
	}
	var missing []string
	for _, alt := range reqs {
		missing = missing[:0]
		for name := range alt {
			if ok, _ := sc.scheme(name); !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			return sc.queryKeys(alt)
		}
	}
	// No alternative is met: report the last one's missing schemes (an
	// operation with one requirement, the common case, is said exactly).
	sort.Strings(missing)
	for _, name := range missing {
		_, takes := sc.scheme(name)
		u := sc.unmet[name]
		if u == nil {
			u = &unmetScheme{takes: takes}
			sc.unmet[name] = u
		}
		u.ops = append(u.ops, label)
	}
	return nil
}

func (sc *securityCheck) scheme(name string) (bool, string) {
	ref := sc.doc.Components.SecuritySchemes[name]
	if ref == nil || ref.Value == nil {
		return false, "a scheme the description does not define"
	}
	return sc.creds.satisfied(ref.Value)
}

func (sc *securityCheck) queryKeys(alt openapi3.SecurityRequirement) map[string]string {
	var out map[string]string
	for name := range alt {
		ref := sc.doc.Components.SecuritySchemes[name]
		if ref != nil && ref.Value != nil && strings.EqualFold(ref.Value.Type, "apiKey") && ref.Value.In == "query" {
			if out == nil {
				out = map[string]string{}
			}
			out[http.CanonicalHeaderKey(ref.Value.Name)] = ref.Value.Name
		}
	}
	return out
}

// err reports the unmet schemes, one line each.
func (sc *securityCheck) err() error {
	if len(sc.unmet) == 0 {
		return nil
	}
	names := make([]string, 0, len(sc.unmet))
	for n := range sc.unmet {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		u := sc.unmet[n]
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "security scheme %q, required by %d selected operation(s) (%s), is not satisfied: it needs %s",
			n, len(u.ops), examples(u.ops), u.takes)
	}
	b.WriteString(" (or leave those operations out with openapi.operations)")
	return fmt.Errorf("%s", b.String())
}

// examples names at most three items of a list.
func examples(list []string) string {
	if len(list) <= 3 {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:3], ", ") + fmt.Sprintf(" and %d more", len(list)-3)
}
