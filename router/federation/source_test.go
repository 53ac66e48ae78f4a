package federation

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/sealed"
)

// ops are the list methods as the router's method table has them.
var ops = map[string]Op{
	"tools/list":               {Method: "tools/list", Field: "tools", Capability: "tools"},
	"resources/list":           {Method: "resources/list", Field: "resources", Capability: "resources", URIField: "uri"},
	"prompts/list":             {Method: "prompts/list", Field: "prompts", Capability: "prompts"},
	"resources/templates/list": {Method: "resources/templates/list", Field: "resourceTemplates", Capability: "resources", URIField: "uriTemplate"},
}

// multi is the naming rule of a vhost of several backends, without
// aliases.
var multi = Naming{Aliases: naming.NewAliases(nil)}

// cursorSecret signs the tests' cursors.
var cursorSecret = []byte("0123456789abcdef0123456789abcdef")

// scriptedSource is a vhost's backends as a unit test of the package's
// logic scripts them (router's list tests run real backends): each
// backend's answer to tools/list by cursor ("" the first page), the size
// its latest page held (when known), and whether the caller sees it.
type scriptedSource struct {
	answers map[string]map[string]string
	sizes   map[string]int
	hidden  map[string]bool

	mu    sync.Mutex
	asked []string // "key@cursor", in no particular order
}

func newScriptedSource() *scriptedSource {
	return &scriptedSource{answers: map[string]map[string]string{}, sizes: map[string]int{}, hidden: map[string]bool{}}
}

func (s *scriptedSource) Visible(key string) bool { return !s.hidden[key] }

func (s *scriptedSource) Cached(key, cursor string) (*Page, string) { return nil, "" }

func (s *scriptedSource) Fetch(ctx context.Context, key, cursor, ck string) *Page {
	s.mu.Lock()
	s.asked = append(s.asked, key+"@"+cursor)
	answer, ok := s.answers[key][cursor]
	expect := s.sizes[key]
	s.mu.Unlock()
	p := &Page{Key: key, Queried: true}
	if !ok || !p.Decode([]byte(answer), ops["tools/list"], expect) {
		p.Failed = true
	}
	return p
}

func (s *scriptedSource) SizeHint(key string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.sizes[key]
	return n, ok
}

func (s *scriptedSource) NoteSize(key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizes[key] = n
}

func (s *scriptedSource) Seal(ctx context.Context, next *sealed.Cursor) (string, error) {
	return sealed.SealCursor(cursorSecret, next)
}

// takeAsked is what was asked since the last call, sorted.
func (s *scriptedSource) takeAsked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Sorted(slices.Values(s.asked))
	s.asked = nil
	return out
}

// toolsPage is a tools/list answer of the named tools, with next as its
// nextCursor ("" none).
func toolsPage(next string, names ...string) string {
	out := `{"tools":[`
	for i, n := range names {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf(`{"name":%q}`, n)
	}
	out += "]"
	if next != "" {
		out += fmt.Sprintf(`,"nextCursor":%q`, next)
	}
	return out + "}"
}
