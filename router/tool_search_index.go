package router

import (
	"encoding/json"
	"sync"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/toolsearch"
)

// A search on a tool_search vhost ranks the tools its backends list,
// indexed on the instance from the lists the instance already walks for
// tools' schemas (tool_schemas.go): per backend, per set of passed-through
// headers, and per caller when the backend's requests carry per-caller
// credentials; for the backend's list_cache TTL or 30 s; dropped on the
// backend's list_changed (on every instance, over the bus) and with the
// routing table on reload. So a search needs no store and no new state:
// an instance that has not walked a backend yet walks it once, and any
// instance answers any search.

// maxIndexedBytes bounds what one vhost holds indexed on an instance,
// over all its backends and callers: the tools as a search answers them
// and about postingBytes a tool for the rest; past it the cache starts
// over. maxBackendTools bounds one backend's list: the rest of a longer
// one is not searched (its schemas still are kept).
const (
	maxIndexedBytes = 64 << 20
	maxBackendTools = 10_000
	postingBytes    = 512
)

// indexedTools is one backend's tools as one kind of caller is shown
// them, indexed.
type indexedTools struct {
	// names are the tools' published names; shown each tool as a search
	// answers it: {name, title, description, inputSchema, annotations,
	// _meta}, published.
	names []string
	shown []json.RawMessage
	seg   toolsearch.Segment
	bytes int // what it holds, about (size)

	mu    sync.Mutex
	views map[policy.View]toolsearch.Bits // which tools each access decision shows
}

// len is the number of tools indexed; 0 for nil.
func (t *indexedTools) len() int {
	if t == nil {
		return 0
	}
	return len(t.names)
}

// size is about how many bytes the list holds: its tools as a search
// answers them, and postingBytes a tool for names, postings and masks; 0
// for nil.
func (t *indexedTools) size() int {
	if t == nil {
		return 0
	}
	return t.bytes + postingBytes*len(t.names)
}

// visible is the set of tools the access view a shows (nil: all). A
// vhost's views are few (one per rule, and none), so each is worked out
// once per list.
func (t *indexedTools) visible(a policy.View) toolsearch.Bits {
	if a.All() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.views[a]; ok {
		return b
	}
	b := toolsearch.NewBits(len(t.names))
	for i, n := range t.names {
		if a.Listed(n) { // as tools/list shows it: a tool needing a step-up is found, and its call asks for the scopes
			b.Set(i)
		}
	}
	if t.views == nil {
		t.views = map[policy.View]toolsearch.Bits{}
	}
	t.views[a] = b
	return b
}

// toolIndexer gathers one backend's tools as its list is walked. A nil
// indexer gathers nothing (a vhost without tool_search).
type toolIndexer struct {
	r    *federation
	v    *vhost
	key  string
	docs []toolsearch.Doc
	out  *indexedTools
}

func (fd *federation) newToolIndexer(v *vhost, key string) *toolIndexer {
	return &toolIndexer{r: fd, v: v, key: key, out: &indexedTools{}}
}

// searchedTool is what a search reads and answers of a list item.
type searchedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// add indexes one tool of the list: name is the backend's, item the
// backend's list item.
func (ix *toolIndexer) add(name string, item json.RawMessage) {
	if ix == nil || len(ix.docs) >= maxBackendTools {
		return
	}
	published, err := ix.r.publishedItem(ix.v, ix.key, item)
	if err != nil {
		return
	}
	var t searchedTool
	if json.Unmarshal(published, &t) != nil || t.Name == "" || gatewayTool(t.Name) {
		return // a backend's tool of a gateway tool's name is shadowed
	}
	shown, err := json.Marshal(t)
	if err != nil {
		return
	}
	docName := name
	if alias, ok := ix.v.aliases.Advertised(ix.key, name); ok {
		docName = alias
	}
	d := toolsearch.Doc{Name: docName, Title: t.Title, Description: t.Description, Backend: ix.key,
		Hint: metaString(t.Meta, metaSearchHint), Params: toolsearch.SchemaParams(t.InputSchema)}
	if t.Title == "" {
		d.Title = annotationTitle(t.Annotations)
	}
	ix.docs = append(ix.docs, d)
	ix.out.names = append(ix.out.names, t.Name)
	ix.out.shown = append(ix.out.shown, shown)
	ix.out.bytes += len(shown)
}

// build indexes what add gathered; nil for a nil indexer.
func (ix *toolIndexer) build() *indexedTools {
	if ix == nil {
		return nil
	}
	ix.out.seg = ix.v.search.ranker.Index(ix.docs)
	return ix.out
}

// publishedItem is a backend's list item as the vhost publishes it.
func (fd *federation) publishedItem(v *vhost, key string, item json.RawMessage) (json.RawMessage, error) {
	out, _, _, err := v.naming().RenameItem(listOps["tools/list"], key, item)
	return out, err
}

// annotationTitle is annotations.title, which older servers give instead
// of a title.
func annotationTitle(annotations json.RawMessage) string {
	var a struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(annotations, &a)
	return a.Title
}

// Hints a tool's _meta may carry for clients that load tools lazily.
const (
	// metaAlwaysLoad: true lists the tool on a tool_search vhost as if
	// always named it.
	metaAlwaysLoad = "anthropic/alwaysLoad"
	// metaSearchHint is indexed with the tool's description.
	metaSearchHint = "anthropic/searchHint"
)

// metaString is the string member key of a _meta object ("" when absent
// or of another type).
func metaString(meta json.RawMessage, key string) string {
	v, ok := wire.MemberValue(meta, key)
	if !ok {
		return ""
	}
	s, _ := wire.String(v)
	return s
}
