package router_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"

	"github.com/mcpgw/gateway/store"
)

func cached(ttl time.Duration) func(*router.Backend) {
	return func(b *router.Backend) {
		b.ListCacheTTL = ttl
		b.PassthroughHeaders = []string{"X-Tenant"}
	}
}

func tenant(name string) http.Header { return http.Header{"X-Tenant": {name}} }

// walk lists every page of tools and returns the names.
func walk(t *testing.T, f *fixture, sid store.SessionID, hdr http.Header) []string {
	t.Helper()
	var all []string
	var params any
	for {
		res := result(t, f.CallHdr(sid, hdr, "tools/list", params))
		all = append(all, names(t, res, "tools")...)
		next, _ := res["nextCursor"].(string)
		if next == "" {
			return all
		}
		params = map[string]any{"cursor": next}
	}
}

func TestListCache_RepeatedWalksReachNoBackend(t *testing.T) {
	f := newFixture(t,
		backendSpec{Key: "one", Opts: testsupport.BackendOptions{PageSize: 2}, Adjust: cached(time.Minute)},
		backendSpec{Key: "two", Adjust: cached(time.Minute)})
	sid, _ := f.Initialize(nil)
	first := walk(t, f, sid, tenant("a"))
	calls := f.Backends["one"].Count("tools/list") + f.Backends["two"].Count("tools/list")
	if calls == 0 {
		t.Fatal("the first walk reached no backend")
	}
	// Another session, another walk: same pages, from the cache.
	other, _ := f.Initialize(nil)
	if again := walk(t, f, other, tenant("a")); !slices.Equal(again, first) {
		t.Fatalf("cached walk %v, first walk %v", again, first)
	}
	if n := f.Backends["one"].Count("tools/list") + f.Backends["two"].Count("tools/list"); n != calls {
		t.Fatalf("backends saw %d tools/list after a cached walk, want %d", n, calls)
	}
}

func TestListCache_KeyedByPassedThroughHeaders(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one", Adjust: cached(time.Minute)}, backendSpec{Key: "two", Adjust: cached(time.Minute)})
	sid, _ := f.Initialize(nil)
	walk(t, f, sid, tenant("a"))
	before := f.Backends["one"].Count("tools/list")
	walk(t, f, sid, tenant("b"))
	if got := f.Backends["one"].Count("tools/list"); got != before+1 {
		t.Fatalf("another tenant's walk made %d backend lists, want 1 (its own entry)", got-before)
	}
	if got := f.Backends["one"].LastHeaders("tools/list").Get("X-Tenant"); got != "b" {
		t.Fatalf("backend saw X-Tenant %q, want b", got)
	}
}

func TestListCache_OffByDefault(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one"}, backendSpec{Key: "two"})
	sid, _ := f.Initialize(nil)
	walk(t, f, sid, nil)
	walk(t, f, sid, nil)
	if got := f.Backends["one"].Count("tools/list"); got != 2 {
		t.Fatalf("uncached backend saw %d tools/list for 2 walks", got)
	}
}

func TestListCache_FailuresAreNotCached(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one", Adjust: cached(time.Minute)}, backendSpec{Key: "two", Adjust: cached(time.Minute)})
	sid, _ := f.Initialize(nil)
	f.Backends["one"].FailMethod("tools/list", 1)
	res := result(t, f.Call(sid, "tools/list", nil))
	if meta, _ := res["_meta"].(map[string]any); meta == nil {
		t.Fatalf("failed backend not reported: %v", res)
	}
	res = result(t, f.Call(sid, "tools/list", nil))
	if _, skipped := res["_meta"]; skipped {
		t.Fatalf("the failure was served from the cache: %v", res)
	}
	if !slices.Contains(names(t, res, "tools"), "one-echo") {
		t.Fatalf("backend one missing after it recovered: %v", names(t, res, "tools"))
	}
}

func TestListCache_ConcurrentMissesShareOneFetch(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one", Adjust: cached(time.Minute)}, backendSpec{Key: "two", Adjust: cached(time.Minute)})
	sid, _ := f.Initialize(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { result(t, f.Call(sid, "tools/list", nil)) })
	}
	wg.Wait()
	if got := f.Backends["one"].Count("tools/list"); got < 1 || got > 2 {
		// One fetch, or two if a caller arrived after the first was cached
		// and expired (it cannot in a minute): never one per caller.
		t.Fatalf("8 concurrent walks made %d backend lists", got)
	}
}

type cacheObs struct {
	mu   sync.Mutex
	hits map[bool]int
}

func (o *cacheObs) BackendCall(string, string, string, time.Duration, string) {}
func (o *cacheObs) ListCacheLookup(_, _ string, hit bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hits[hit]++
}

func TestListCache_LookupsReachTheObserver(t *testing.T) {
	obs := &cacheObs{hits: map[bool]int{}}
	f := newFixtureOpts(t, router.Options{Observer: obs},
		backendSpec{Key: "one", Adjust: cached(time.Minute)}, backendSpec{Key: "two"})
	sid, _ := f.Initialize(nil)
	walk(t, f, sid, nil)
	walk(t, f, sid, nil)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// Only the cached backend is looked up: a miss, then a hit.
	if obs.hits[false] != 1 || obs.hits[true] != 1 {
		t.Fatalf("lookups %v, want one miss and one hit", obs.hits)
	}
}
