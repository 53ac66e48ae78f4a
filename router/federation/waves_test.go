package federation

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/mcpgw/gateway/router/sealed"
)

// onePage builds the page of a walk at positions from src: the names of
// its items in order, its nextCursor's positions (nil: none), and its
// _meta.
func onePage(t *testing.T, src *scriptedSource, keys []string, maxItems int, positions map[string]sealed.BackendCursor) (names []string, next map[string]sealed.BackendCursor, meta map[string]json.RawMessage) {
	t.Helper()
	l := &List{Op: ops["tools/list"], VHost: "v", Principal: "alice", Keys: keys, Naming: multi,
		Positions: positions, MaxItems: maxItems}
	pages, hits := l.Waves(t.Context(), src)
	if hits != 0 {
		t.Fatalf("%d cache hits from a source without a cache", hits)
	}
	raw, err := l.Merge(t.Context(), src, pages, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tools      []struct{ Name string }
		NextCursor *string
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("page %s: %v", raw, err)
	}
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
	}
	if out.NextCursor != nil {
		c, err := sealed.OpenCursor(cursorSecret, *out.NextCursor)
		if err != nil || !c.Accepts("tools/list", "v", "alice") {
			t.Fatalf("next cursor %v (%v)", c, err)
		}
		next = c.Backends
	}
	return names, next, out.Meta
}

// A walk asks, page by page, only the backends expected to fill the
// page: unseen ones an eighth of it each, known ones as many items as
// their latest page held; one known not to fit whole waits for the next
// page, and one cut by the bound resumes at its offset. Every item is
// sent once, in name order within a page.
func TestList_WavesAskOnlyWhatFillsThePage(t *testing.T) {
	src := newScriptedSource()
	keys := []string{"a", "b", "c"}
	for _, k := range keys {
		src.answers[k] = map[string]string{"": toolsPage("", "t1", "t2", "t3")}
	}
	type step struct {
		asked, names []string
		done         bool
	}
	steps := []step{
		// Unseen: 1 item each is expected, so all three are asked;
		// the bound cuts b's page after one item.
		{asked: []string{"a@", "b@", "c@"}, names: []string{"a-t1", "a-t2", "a-t3", "b-t1"}},
		// b is expected to add 2 more; c's 3 would not fit: it waits.
		{asked: []string{"b@"}, names: []string{"b-t2", "b-t3"}},
		{asked: []string{"c@"}, names: []string{"c-t1", "c-t2", "c-t3"}, done: true},
	}
	positions := map[string]sealed.BackendCursor{}
	for i, s := range steps {
		names, next, _ := onePage(t, src, keys, 4, positions)
		if asked := src.takeAsked(); !slices.Equal(asked, s.asked) {
			t.Fatalf("page %d asked %v, want %v", i+1, asked, s.asked)
		}
		if !slices.Equal(names, s.names) {
			t.Fatalf("page %d listed %v, want %v", i+1, names, s.names)
		}
		if (next == nil) != s.done {
			t.Fatalf("page %d: next cursor %v, want one: %v", i+1, next, !s.done)
		}
		positions = next
	}
}

// A backend the caller may not see is not asked and holds no items; a
// failed one is named in _meta and, failing on the walk's first page,
// does not keep the walk going.
func TestList_HiddenAndFailedBackends(t *testing.T) {
	src := newScriptedSource()
	src.answers["a"] = map[string]string{"": toolsPage("", "x")}
	src.answers["c"] = map[string]string{"": toolsPage("", "y")}
	src.hidden["a"] = true // b has no answer: it fails
	names, next, meta := onePage(t, src, []string{"a", "b", "c"}, 10, map[string]sealed.BackendCursor{})
	if asked := src.takeAsked(); !slices.Equal(asked, []string{"b@", "c@"}) {
		t.Fatalf("asked %v", asked)
	}
	if !slices.Equal(names, []string{"c-y"}) || next != nil {
		t.Fatalf("listed %v, next %v", names, next)
	}
	if got := string(meta[MetaSkippedBackends]); got != `["b"]` {
		t.Fatalf("skipped %s", got)
	}
}

// A backend that fails mid-walk, when no other has pages left, fails the
// page: only it holds the rest of the walk.
func TestList_StrandedPagesFailThePage(t *testing.T) {
	src := newScriptedSource() // b answers nothing: it fails
	l := &List{Op: ops["tools/list"], VHost: "v", Principal: "alice", Keys: []string{"a", "b"}, Naming: multi,
		Positions: map[string]sealed.BackendCursor{"a": {Done: true}, "b": {Cursor: "p2"}}, MaxItems: 10}
	pages, _ := l.Waves(t.Context(), src)
	_, err := l.Merge(t.Context(), src, pages, false, nil, nil)
	var stranded *StrandedPagesError
	if !errors.As(err, &stranded) || !slices.Equal(stranded.Backends, []string{"b"}) {
		t.Fatalf("merge: %v", err)
	}
}
