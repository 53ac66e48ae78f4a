package federation

import (
	"context"
	"sync"

	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/sealed"
)

// List is one page of a list walk on a vhost: what is listed, for whom,
// from which backends, and where each of them stands.
type List struct {
	Op        Op
	VHost     string      // the vhost's name, sealed in the next cursor
	Principal string      // the caller, sealed in the next cursor (as its tag)
	Keys      []string    // the vhost's backends, sorted: fan-out and merge order
	Naming    Naming      // the vhost's publishing rule (Single: one backend)
	Access    policy.View // the caller's: the items it hides are left out
	// Lead is what the page starts with (the gateway's own tools, on the
	// first tools/list page of a tool_search vhost); Listed, when set,
	// is whether a tools/list item stays listed (tool_search).
	Lead   []*Item
	Listed func(*Item) bool
	// Positions is where each backend of the walk stands; a missing key
	// means "first page". The page does not change it.
	Positions map[string]sealed.BackendCursor
	MaxItems  int // a page holds at most this many items
}

// Source is the router's side of one list request: the vhost's backends
// as the caller reaches them.
type Source interface {
	// Visible reports whether the caller's access rules leave anything
	// backend key lists visible.
	Visible(key string) bool
	// Cached is backend key's page at cursor from its list cache (a hit
	// costs no goroutine); nil on a miss. ck is the page's cache key, ""
	// when the backend's pages are not cached; Fetch takes it.
	Cached(key, cursor string) (p *Page, ck string)
	// Fetch asks backend key for its page at cursor (through its list
	// cache under ck, when set). Fetches of one wave run concurrently.
	Fetch(ctx context.Context, key, cursor, ck string) *Page
	// SizeHint is how many items backend key's latest page held;
	// NoteSize records a page's.
	SizeHint(key string) (n int, ok bool)
	NoteSize(key string, n int)
	// Seal signs the next cursor.
	Seal(ctx context.Context, next *sealed.Cursor) (string, error)
}

// unseenShare: a backend whose page sizes are not known yet is expected
// to fill 1/unseenShare of a page.
const unseenShare = 8

// Waves asks the backends of a walk for their pages at their positions,
// in waves: a page holds at most MaxItems items, so a wave asks, in key
// order, only as many backends as are expected to fill it (each as many
// items as its latest page held: Source.SizeHint; a backend never seen
// is expected to fill an eighth of the page), and defers the rest, which
// keep their positions for the next page. When the answers fall short of
// the bound, the next wave asks the deferred backends in the same way. On
// a vhost of 50 backends of 200 tools a page thus asks about six
// backends, where asking all fifty would fetch, decode and sort 10,000
// items to send 1,000 (and a fresh instance's first page asks eight, not
// fifty, for every walk under way); a vhost whose backends' items fit in
// a page asks every backend in one wave once their sizes are known, and
// up to eight at once before. hits is how many pages came from the list
// cache.
func (l *List) Waves(ctx context.Context, src Source) (_ []*Page, hits int) {
	pages := make([]*Page, len(l.Keys)) // not the result: a wave's goroutines would move it to the heap
	// left is the items a page adds to the gateway's: those past the
	// backend's offset into its page.
	left := func(p *Page) int {
		if p == nil || !p.Queried || p.Failed {
			return 0
		}
		return max(p.Size()-l.Positions[p.Key].Offset, 0)
	}
	have := 0 // items the answers so far add, or are expected to
	todo := make([]int, 0, len(l.Keys))
	for i, key := range l.Keys {
		switch {
		case l.Positions[key].Done:
			pages[i] = &Page{Key: key}
		case !src.Visible(key):
			pages[i] = &Page{Key: key, Hidden: true}
		default:
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 && have < l.MaxItems {
		var wg sync.WaitGroup
		var wave []int
		full := false // a backend known not to fit whole waits for the next page
		rest := todo[:0]
		for _, i := range todo {
			key := l.Keys[i]
			if full || have >= l.MaxItems {
				rest = append(rest, i)
				continue
			}
			pos := l.Positions[key]
			p, ck := src.Cached(key, pos.Cursor)
			if p != nil {
				pages[i] = p
				hits++
				have += left(p)
				continue
			}
			if n, ok := src.SizeHint(key); !ok {
				have += max(l.MaxItems/unseenShare, 1)
			} else if expect := max(n-pos.Offset, 1); have > 0 && have+expect > l.MaxItems {
				// Asked now, its page would be cut and asked for again
				// on the next page, which sends the rest: a page of
				// fewer items costs less than a page fetched twice.
				full = true
				rest = append(rest, i)
				continue
			} else {
				have += expect // not done: at least one more
			}
			wave = append(wave, i)
			wg.Go(func() { pages[i] = src.Fetch(ctx, key, pos.Cursor, ck) })
		}
		wg.Wait()
		todo = rest
		if len(wave) == 0 {
			if full {
				break // the next page starts with it
			}
			continue // cached pages only: have is exact
		}
		for _, i := range wave {
			if p := pages[i]; p.Queried && !p.Failed {
				src.NoteSize(p.Key, p.Size())
			}
		}
		have = 0
		for _, p := range pages {
			have += left(p)
		}
	}
	for _, i := range todo {
		pages[i] = &Page{Key: l.Keys[i], Deferred: true}
	}
	return pages, hits
}
