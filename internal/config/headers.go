package config

import (
	"errors"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/upstream"
)

// headerList canonicalises and de-duplicates header names, rejecting
// protected ones (and, when forwarded, Authorization and Cookie).
func (v *validator) headerList(path string, list []string, forwarded bool) []string {
	out := make([]string, 0, len(list))
	for i, h := range list {
		p := indexPath(path, i)
		h = strings.TrimSpace(h)
		if !validHeaderName(h) {
			v.errf(p, "%q is not a valid header name", h)
			continue
		}
		c := http.CanonicalHeaderKey(h)
		switch {
		case ProtectedHeader(c):
			v.errf(p, "%s is a protected header and cannot be configured", c)
			continue
		case forwarded && upstream.Credential(c):
			v.errf(p, "%s is never passed through to backends (set a backend credential with add_headers)", c)
			continue
		}
		if !contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// addHeaders validates names, expands ${VAR} in values and stores them in b.
// Values may be secrets: they are never put in messages.
func (v *validator) addHeaders(path string, m map[string]string, b *router.Backend) {
	for _, name := range sortedKeys(m) {
		p := joinPath(path, name)
		if !validHeaderName(name) {
			v.errf(p, "%q is not a valid header name", name)
			continue
		}
		c := http.CanonicalHeaderKey(name)
		if ProtectedHeader(c) {
			v.errf(p, "%s is a protected header and cannot be configured", c)
			continue
		}
		_, dup := b.AddHeaders[c]
		if _, tdup := b.HeaderTemplates[c]; dup || tdup {
			v.errf(p, "header %s is set twice (header names are case-insensitive)", c)
			continue
		}
		// ${claims...} are kept for each request (router/credentials);
		// ${VAR} in the text around them is expanded now.
		t, err := credentials.ParseTemplate(m[name], func(lit string) (string, error) {
			val, err := expandEnv(lit)
			if err == nil && !validHeaderValue(val) {
				err = errors.New("the value (after ${VAR} expansion) holds a control character")
			}
			return val, err
		})
		if err != nil {
			v.errf(p, "%s", err.Error())
			continue
		}
		if t.HasClaims() {
			if b.HeaderTemplates == nil {
				b.HeaderTemplates = map[string]*credentials.Template{}
			}
			b.HeaderTemplates[c] = t
			continue
		}
		val, _ := t.Expand(nil) // a constant
		b.AddHeaders[c] = val
	}
}

// ProtectedHeader reports whether config may never set, pass through or
// remove the header name (case-insensitive). The list is the upstream
// client's own (upstream.ProtectedHeader): whatever the client would drop
// at request time, validation refuses at load time, so a configured header
// is never silently ignored.
func ProtectedHeader(name string) bool { return upstream.ProtectedHeader(name) }

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue rejects control characters other than horizontal tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// validToolName: 1-128 bytes, no whitespace or control characters.
func validToolName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '\u00a0' || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}
