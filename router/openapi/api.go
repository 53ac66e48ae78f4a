// Package openapi turns an OpenAPI description (3.0, 3.1 or Swagger 2.0)
// into MCP tools, and a call of one of them into an HTTP request and its
// response into a tool result.
//
// It exists so a REST API can be a backend without an MCP server in front
// of it: config loads the description once (Load), checks it at start-up
// (bounds, operation globs, security schemes against the backend's
// credentials), and router/upstream serves the tools from the compiled
// API, which holds no reference to the parsed document: only what a call
// needs (each operation's parameters and body, pre-rendered tool
// definitions, compiled input schemas).
//
// Parsing and reference resolution are github.com/getkin/kin-openapi's:
// one document model for 3.0 and 3.1, Swagger 2.0 converted into it
// (openapi2conv), and a hook for every external document it reads, which
// is where the gateway decides which references it may follow.
package openapi

import (
	"encoding/json"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Bounds on what one description may cost an instance; each is a start-up
// error naming the bound when exceeded.
const (
	// MaxDocumentBytes bounds the description and each document it refers
	// to (GitHub's REST description is 13 MB).
	MaxDocumentBytes = 64 << 20
	// MaxOperations bounds the operations of a description, selected or
	// not (GitHub's has 1,223).
	MaxOperations = 10_000
	// MaxSchemaDepth bounds how deep a schema nests inline, and how long a
	// chain of references one tool's schemas follow.
	MaxSchemaDepth = 64
	// MaxToolBytes bounds one tool's definition (name, description,
	// schemas): a tool past it is a start-up error naming the operation.
	MaxToolBytes = 4 << 20
	// DefaultMaxResponseBytes is max_response_bytes when unset.
	DefaultMaxResponseBytes = 1 << 20
	// listPageTools is how many tools one tools/list page holds.
	listPageTools = 100
)

// Options say where the description is and what to make of it: the
// `openapi` block of a backend, with the backend's credentials.
type Options struct {
	// Backend names the backend in errors.
	Backend string
	// Spec is an absolute file path or an http(s) URL.
	Spec string
	// BaseURL replaces the description's servers when set.
	BaseURL string
	// Operations are operationId globs, or "METHOD /path" globs ('*' any
	// run of characters); empty selects every operation.
	Operations []string
	// MaxResponseBytes bounds a response body (DefaultMaxResponseBytes
	// when zero).
	MaxResponseBytes int64
	// RemoteRefs are URL prefixes that references to other documents
	// over http(s) may be read from. Files beside the description (in its
	// directory or below) may always be read.
	RemoteRefs []string
	// Credentials is what the backend's config sends, checked against
	// the security schemes of the selected operations.
	Credentials Credentials
}

// API is a description compiled into tools. It is immutable and safe for
// concurrent use.
type API struct {
	backend  string
	title    string
	version  string
	summary  string
	base     *url.URL // nil: each tool has its own (operation servers)
	maxBytes int64
	tools    []*Tool // sorted by name
	byName   map[string]*Tool
	// queryKeys are the API keys sent in the query: the config header
	// that holds each (canonical name) -> the query parameter.
	queryKeys map[string]string
}

// Title is the description's info.title.
func (a *API) Title() string { return a.title }

// Version is the description's info.version.
func (a *API) Version() string { return a.version }

// Instructions describes the API for a client (info.title and the
// description's summary): the backend's instructions.
func (a *API) Instructions() string { return a.summary }

// MaxResponseBytes is the bound on a response body.
func (a *API) MaxResponseBytes() int64 { return a.maxBytes }

// Len is the number of tools.
func (a *API) Len() int { return len(a.tools) }

// Tool returns the tool of that name, or nil.
func (a *API) Tool(name string) *Tool { return a.byName[name] }

// Names lists the tools' names, sorted.
func (a *API) Names() []string {
	out := make([]string, len(a.tools))
	for i, t := range a.tools {
		out[i] = t.name
	}
	return out
}

// Page is one tools/list page: the tool definitions from the offset a
// cursor names, and the cursor of the next page ("" at the end).
type Page struct {
	Tools      []json.RawMessage
	NextCursor string
}

// ErrBadCursor is returned by ListPage for a cursor it never issued.
type ErrBadCursor struct{ Cursor string }

func (e *ErrBadCursor) Error() string { return "invalid cursor" }

// ListPage returns the page a cursor names ("" the first).
func (a *API) ListPage(cursor string) (Page, error) {
	start := 0
	if cursor != "" {
		n, ok := parseCursor(cursor)
		if !ok || n <= 0 || n >= len(a.tools) {
			return Page{}, &ErrBadCursor{Cursor: cursor}
		}
		start = n
	}
	end := min(start+listPageTools, len(a.tools))
	p := Page{Tools: make([]json.RawMessage, 0, end-start)}
	for _, t := range a.tools[start:end] {
		p.Tools = append(p.Tools, t.def)
	}
	if end < len(a.tools) {
		p.NextCursor = formatCursor(end)
	}
	return p, nil
}

func (a *API) index() {
	sort.Slice(a.tools, func(i, j int) bool { return a.tools[i].name < a.tools[j].name })
	a.byName = make(map[string]*Tool, len(a.tools))
	for _, t := range a.tools {
		a.byName[t.name] = t
	}
}

// Cursors are the offset of the page's first tool: the tool list is fixed
// for the API's life, and a config reload that changes it tells clients
// (list_changed), so an offset is all a page needs.
const cursorPrefix = "tools@"

func formatCursor(n int) string { return cursorPrefix + strconv.Itoa(n) }

func parseCursor(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// Error is a Load failure. Field names the `openapi` field at fault
// ("spec", "operations", "base_url"), or "security" for a scheme the
// backend's credentials do not satisfy.
type Error struct {
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fieldError(field string, err error) error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	return &Error{Field: field, Err: err}
}
