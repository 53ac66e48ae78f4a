package router_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
)

// An uncached list page is read, renamed and merged in buffers lent by
// bufpool and given back once the gateway's page is built, to be read
// into again by the next page of any request (federation.Page.Release). Walks
// running side by side, many pages each, every page asking its backends
// again mid-page (max_page_items), must then still see every item as a
// walk alone sees it, byte for byte: a buffer given back while a page
// still read it would show here as items from another page.
func TestList_PooledPagesAcrossConcurrentWalks(t *testing.T) {
	opts := router.Options{MaxPageItems: 25}
	f := newFixtureOpts(t, opts,
		backendSpec{Key: "a", Opts: testsupport.BackendOptions{PageSize: 40, ExtraTools: 90}},
		backendSpec{Key: "b", Opts: testsupport.BackendOptions{PageSize: 30, ExtraTools: 60}},
		backendSpec{Key: "c", Opts: testsupport.BackendOptions{PageSize: 100, ExtraTools: 20}})
	sid, _ := f.Initialize(nil)

	walk := func(t *testing.T, id int) []string {
		var items []string
		cursor := ""
		for page := 0; ; page++ {
			if page > 40 {
				t.Error("pagination does not end")
				return nil
			}
			var params map[string]any
			if cursor != "" {
				params = map[string]any{"cursor": cursor}
			}
			resp := f.Instance.Call(t, sid, mustID(id*1000+page), nil, "tools/list", params, nil)
			if resp.Error != nil {
				t.Errorf("page %d: %v", page+1, resp.Error)
				return nil
			}
			var res struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(resp.Result, &res); err != nil {
				t.Errorf("page %d: %v", page+1, err)
				return nil
			}
			for _, it := range res.Tools {
				items = append(items, string(it))
			}
			if res.NextCursor == "" {
				return items
			}
			cursor = res.NextCursor
		}
	}

	// Which backends a page asks depends on the page sizes the instance
	// has seen (federation's List.Waves), so the order of a walk may change once; the
	// items, sorted, may not.
	want := slices.Sorted(slices.Values(walk(t, 0)))
	if n := 3*3 + 90 + 60 + 20; len(want) != n {
		t.Fatalf("a walk alone listed %d tools, want %d", len(want), n)
	}
	var wg sync.WaitGroup
	for w := 1; w <= 6; w++ {
		wg.Go(func() {
			for range 3 {
				if got := slices.Sorted(slices.Values(walk(t, w))); !slices.Equal(got, want) {
					t.Errorf("walker %d listed %d tools unlike a walk alone (%d)", w, len(got), len(want))
					return
				}
			}
		})
	}
	wg.Wait()
}
