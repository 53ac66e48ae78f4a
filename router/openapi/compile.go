package openapi

// Compiling a parsed description: its operations counted and selected,
// named, checked against the backend's credentials, each turned into a
// Tool, and the parsed document let go of.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// operation is one operation of the description, before it is a tool.
type operation struct {
	id, method, path, name string
	item                   *openapi3.PathItem
	op                     *openapi3.Operation
}

// label names an operation in messages: its id, else method and path.
func (o *operation) label() string {
	if o.id != "" {
		return o.id
	}
	return o.method + " " + o.path
}

// compile builds the API from a parsed description.
func compile(doc *openapi3.T, r *reader, o Options) (*API, error) {
	ops, err := operations(doc)
	if err != nil {
		return nil, err
	}
	sel := newSelector(o.Operations)
	var chosen []*operation
	for _, op := range ops {
		if sel.selects(op) {
			chosen = append(chosen, op)
		}
	}
	if unused := sel.unused(); len(unused) > 0 {
		return nil, fieldError("operations", fmt.Errorf("operations %s match no operation of the description (it has %d; globs match operationIds, or \"METHOD /path\")",
			strings.Join(unused, ", "), len(ops)))
	}
	if len(chosen) == 0 {
		return nil, errors.New("the description has no operations")
	}
	uniqueNames(chosen)

	a := &API{backend: o.Backend, maxBytes: o.MaxResponseBytes, queryKeys: map[string]string{}}
	if a.maxBytes <= 0 {
		a.maxBytes = DefaultMaxResponseBytes
	}
	if doc.Info != nil {
		a.title, a.version = doc.Info.Title, doc.Info.Version
		a.summary = strings.TrimSpace(doc.Info.Title + "\n\n" + firstParagraph(doc.Info.Description))
	}
	if o.BaseURL != "" {
		if a.base, err = absoluteBase(o.BaseURL); err != nil {
			return nil, fieldError("base_url", err)
		}
	}

	sec := &securityCheck{doc: doc, creds: o.Credentials, unmet: map[string]*unmetScheme{}}
	b := &builder{doc: doc, schemas: newSchemas(!strings.HasPrefix(doc.OpenAPI, "3.1"))}
	for _, op := range chosen {
		t, err := b.tool(op)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %w", op.label(), err)
		}
		if t.base = a.base; t.base == nil {
			if t.base, err = serverBase(op, doc, r.root); err != nil {
				return nil, fieldError("base_url", fmt.Errorf("operation %s: %w", op.label(), err))
			}
		}
		t.queryKeys = sec.operation(op.op, op.label())
		for h, q := range t.queryKeys {
			a.queryKeys[h] = q
		}
		a.tools = append(a.tools, t)
	}
	if err := sec.err(); err != nil {
		return nil, fieldError("security", err)
	}
	a.index()
	return a, nil
}

// methods are the HTTP methods of a path item, in a fixed order.
var methods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
	http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace}

// operations lists the description's operations by path, then method.
func operations(doc *openapi3.T) ([]*operation, error) {
	if doc.Paths == nil {
		return nil, nil
	}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	var ops []*operation
	for _, p := range paths {
		item := doc.Paths.Value(p)
		if item == nil {
			continue
		}
		for _, m := range methods {
			op := item.GetOperation(m)
			if op == nil {
				continue
			}
			if len(ops) == MaxOperations {
				return nil, fmt.Errorf("the description has more than %d operations", MaxOperations)
			}
			ops = append(ops, &operation{id: op.OperationID, method: m, path: p, item: item, op: op,
				name: baseName(op.OperationID, m, p)})
		}
	}
	return ops, nil
}

// serverBase is an operation's base URL: its own servers, its path's, or
// the description's, the first of them with its variables' defaults. A
// relative one is taken from the description's URL.
func serverBase(op *operation, doc *openapi3.T, root *url.URL) (*url.URL, error) {
	servers := doc.Servers
	if len(op.item.Servers) > 0 {
		servers = op.item.Servers
	}
	if op.op.Servers != nil && len(*op.op.Servers) > 0 {
		servers = *op.op.Servers
	}
	if len(servers) == 0 || servers[0] == nil {
		return nil, errors.New("the description names no server: set openapi.base_url")
	}
	s := servers[0]
	raw := serverVarRE.ReplaceAllStringFunc(s.URL, func(m string) string {
		if v := s.Variables[m[1:len(m)-1]]; v != nil {
			return v.Default
		}
		return m
	})
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the server URL %q is not a URL: set openapi.base_url", s.URL)
	}
	if !u.IsAbs() {
		if root.Scheme == "" {
			return nil, fmt.Errorf("the server URL %q is relative to where the description is served, and it was read from a file: set openapi.base_url", s.URL)
		}
		u = root.ResolveReference(u)
	}
	return absoluteBase(u.String())
}

var serverVarRE = regexp.MustCompile(`\{[^{}]+\}`)

// absoluteBase checks a base URL: absolute http(s), no query or fragment.
func absoluteBase(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", redactURL(u))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q has a query or fragment", redactURL(u))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// firstParagraph keeps an API's description short enough for
// instructions.
func firstParagraph(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}
