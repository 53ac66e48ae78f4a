package router_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
)

// Backend "short" has one page of tools; "long" has 3 demo tools plus 3
// extra ones, 2 per page: 3 pages.
func pagedBackends(t *testing.T, opts router.Options) *fixture {
	return newFixtureOpts(t, opts,
		backendSpec{Key: "short", Opts: testsupport.BackendOptions{PageSize: 50}},
		backendSpec{Key: "long", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
	)
}

func cursorOf(res map[string]any) (string, bool) {
	c, ok := res["nextCursor"].(string)
	return c, ok
}

func TestPagination_CursorPreservedPerBackendAndExhaustedSkipped(t *testing.T) {
	f := pagedBackends(t, router.Options{})
	sid, _ := f.Initialize(nil)

	var all []string
	page := result(t, f.Call(sid, "tools/list", nil))
	all = append(all, names(t, page, "tools")...)
	pages := 1
	for {
		cur, ok := cursorOf(page)
		if !ok {
			break
		}
		page = result(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur}))
		all = append(all, names(t, page, "tools")...)
		pages++
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
	}
	if pages != 3 {
		t.Fatalf("walked %d pages, want 3", pages)
	}
	// Every tool of both backends exactly once.
	if len(all) != 3+6 {
		t.Fatalf("got %d tools, want 9: %v", len(all), all)
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatalf("duplicates across pages: %v", all)
	}
	// The exhausted backend was queried once, not on every page.
	if n := f.Backends["short"].Count("tools/list"); n != 1 {
		t.Fatalf("exhausted backend queried %d times, want 1", n)
	}
	if n := f.Backends["long"].Count("tools/list"); n != 3 {
		t.Fatalf("paging backend queried %d times, want 3", n)
	}
}

func TestPagination_FailedBackendKeepsItsCursor(t *testing.T) {
	f := newFixture(t,
		backendSpec{Key: "a", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
		backendSpec{Key: "b", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
	)
	sid, _ := f.Initialize(nil)
	p1 := result(t, f.Call(sid, "tools/list", nil))
	cur1, _ := cursorOf(p1)
	bPage1 := filterPrefix(names(t, p1, "tools"), "b-")

	f.Backends["b"].FailMethod("tools/list", 1)
	p2 := result(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur1}))
	if got := filterPrefix(names(t, p2, "tools"), "b-"); len(got) != 0 {
		t.Fatalf("failed backend contributed items: %v", got)
	}
	if !strings.Contains(toJSON(p2["_meta"]), `"b"`) {
		t.Fatalf("_meta does not name the failed backend: %v", p2["_meta"])
	}
	cur2, ok := cursorOf(p2)
	if !ok {
		t.Fatal("no next cursor though both backends have more pages")
	}
	p3 := result(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur2}))
	bPage2 := filterPrefix(names(t, p3, "tools"), "b-")
	if len(bPage2) == 0 {
		t.Fatal("backend b did not resume")
	}
	for _, n := range bPage2 {
		if slices.Contains(bPage1, n) {
			t.Fatalf("b restarted from page one (%q seen twice): its cursor was lost", n)
		}
	}
}

func TestPagination_NoCursorWhenAllBackendsDone(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	if _, ok := cursorOf(result(t, f.Call(sid, "tools/list", nil))); ok {
		t.Fatal("nextCursor emitted though no backend has more pages")
	}
}

func TestPagination_InvalidCursorsAreInvalidParams(t *testing.T) {
	f := pagedBackends(t, router.Options{})
	sid, _ := f.Initialize(nil)
	cur, _ := cursorOf(result(t, f.Call(sid, "tools/list", nil)))

	cases := map[string]struct {
		method, cursor string
	}{
		"garbage":         {"tools/list", "not-a-cursor"},
		"tampered":        {"tools/list", cur[:len(cur)-2] + "AA"},
		"other operation": {"prompts/list", cur},
		"empty":           {"tools/list", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := rpcErr(t, f.Call(sid, tc.method, map[string]any{"cursor": tc.cursor}))
			if e.Code != router.CodeInvalidParams {
				t.Fatalf("got %d %q, want -32602", e.Code, e.Message)
			}
		})
	}
}

func TestPagination_ForeignVHostCursorRejected(t *testing.T) {
	st := newStore(t)
	secret := []byte("shared-secret")
	a := newFixtureOpts(t, router.Options{Store: st, CursorSecret: secret},
		backendSpec{Key: "long", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}}, backendSpec{Key: "x"})
	b := newFixtureOpts(t, router.Options{Store: st, CursorSecret: secret},
		backendSpec{Key: "long", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}}, backendSpec{Key: "x"})
	b.VHost = "other"
	b.Router = router.New(map[string]*router.VirtualHost{"other": {Name: "other", Backends: map[string]*router.Backend{
		"long": {Config: upstream.Config{Key: "long", URL: b.Backends["long"].URL, Timeout: 5e9}},
		"x":    {Config: upstream.Config{Key: "x", URL: b.Backends["x"].URL, Timeout: 5e9}},
	}}}, router.Options{Store: st, CursorSecret: secret})
	t.Cleanup(b.Router.Close)

	sa, _ := a.Initialize(nil)
	cur, _ := cursorOf(result(t, a.Call(sa, "tools/list", nil)))
	sb, _ := b.Initialize(nil)
	e := rpcErr(t, b.Call(sb, "tools/list", map[string]any{"cursor": cur}))
	if e.Code != router.CodeInvalidParams {
		t.Fatalf("foreign-vhost cursor: got %d %q", e.Code, e.Message)
	}
}

// Two instances with different configs share the store and cursor key, as
// during a rolling config change: a backend added since the first page
// starts at its first page; a removed backend is dropped.
func TestPagination_BackendSetChangesBetweenPages(t *testing.T) {
	st := newStore(t)
	before := newFixtureOpts(t, router.Options{Store: st},
		backendSpec{Key: "long", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
		backendSpec{Key: "gone", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}})
	sid, _ := before.Initialize(nil)
	cur, _ := cursorOf(result(t, before.Call(sid, "tools/list", nil)))

	added := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "added"})
	after := router.New(map[string]*router.VirtualHost{"vh": {Name: "vh", Backends: map[string]*router.Backend{
		"long":  {Config: upstream.Config{Key: "long", URL: before.Backends["long"].URL, Timeout: 5e9}},
		"added": {Config: upstream.Config{Key: "added", URL: added.URL, Timeout: 5e9}},
	}}}, router.Options{Store: st})
	t.Cleanup(after.Close)

	goneCalls := before.Backends["gone"].Count("tools/list")
	page := result(t, callOn(t, after, st, sid, nil, "tools/list", map[string]any{"cursor": cur}))
	got := names(t, page, "tools")
	if len(filterPrefix(got, "added-")) != 3 {
		t.Fatalf("added backend did not start at its first page: %v", got)
	}
	if len(filterPrefix(got, "long-")) == 0 {
		t.Fatalf("long backend did not continue: %v", got)
	}
	if before.Backends["gone"].Count("tools/list") != goneCalls {
		t.Fatal("removed backend was queried")
	}
}

// A cursor is bound to the caller who started the walk: another principal
// on the same vhost presenting it is refused exactly like a forged cursor.
func TestPagination_CursorBoundToPrincipal(t *testing.T) {
	f := pagedBackends(t, router.Options{})
	alice, _ := f.InitializeAs("alice", nil)
	bob, _ := f.InitializeAs("bob", nil)
	cur, ok := cursorOf(result(t, f.Call(alice, "tools/list", nil)))
	if !ok {
		t.Fatal("no cursor on the first page")
	}
	e := rpcErr(t, f.Call(bob, "tools/list", map[string]any{"cursor": cur}))
	if e.Code != router.CodeInvalidParams {
		t.Fatalf("bob with alice's cursor: got %d %q, want -32602", e.Code, e.Message)
	}
	// Alice's own cursor still works.
	result(t, f.Call(alice, "tools/list", map[string]any{"cursor": cur}))
}

// When the backend that holds the only remaining pages fails mid-walk, the
// page is an error naming it, not an empty last page that would end the
// walk without its items; the same cursor, retried, resumes the walk.
func TestPagination_StrandedBackendFailsThePage(t *testing.T) {
	f := pagedBackends(t, router.Options{})
	sid, _ := f.Initialize(nil)
	p1 := result(t, f.Call(sid, "tools/list", nil))
	all := names(t, p1, "tools")
	cur, _ := cursorOf(p1)

	f.Backends["long"].FailMethod("tools/list", 1)
	e := rpcErr(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur}))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, `"long"`) {
		t.Fatalf("got %d %q, want -32603 naming backend \"long\"", e.Code, e.Message)
	}
	for pages := 1; ; pages++ {
		page := result(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur}))
		all = append(all, names(t, page, "tools")...)
		next, ok := cursorOf(page)
		if !ok {
			break
		}
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		cur = next
	}
	if len(all) != 3+6 {
		t.Fatalf("walk after the retry listed %d tools, want all 9: %v", len(all), all)
	}
}

// A backend failing on the first page was never part of the walk: it is
// named in _meta and the walk ends without it (not an error: the other
// backends' items are all there is).
func TestPagination_BackendFailingFromTheStartIsSkipped(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	f.Backends["b"].FailMethod("tools/list", 1)
	page := result(t, f.Call(sid, "tools/list", nil))
	if _, ok := cursorOf(page); ok {
		t.Fatal("a cursor was issued though no backend has more pages")
	}
	if !strings.Contains(toJSON(page["_meta"]), `"b"`) {
		t.Fatalf("_meta does not name the failed backend: %v", page["_meta"])
	}
}

func filterPrefix(ns []string, p string) []string {
	var out []string
	for _, n := range ns {
		if strings.HasPrefix(n, p) {
			out = append(out, n)
		}
	}
	return out
}

// A gateway page holds at most MaxPageItems items whatever the number of
// backends: the rest of a backend's page waits for the next gateway page,
// asked again and skipped up to where it was sent. The walk, its pages
// alternating between two instances, still returns every item once.
func TestPagination_PagesBoundedByMaxPageItemsAcrossInstances(t *testing.T) {
	opts := router.Options{MaxPageItems: 2}
	f := newFixtureOpts(t, opts,
		backendSpec{Key: "a", Opts: testsupport.BackendOptions{PageSize: 50, ExtraTools: 4}},
		backendSpec{Key: "b", Opts: testsupport.BackendOptions{PageSize: 3, ExtraTools: 2}},
		backendSpec{Key: "c"})
	other := f.NewInstance(routertest.Options{Router: opts})
	sid, _ := f.Initialize(nil)
	want := 7 + 5 + 3 // a: 3 demo tools + 4; b: 3 + 2; c: 3
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("pagination does not end")
		}
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		in := f.Instance
		if pages%2 == 1 {
			in = other
		}
		page := result(t, in.Call(t, sid, mustID(pages+1), nil, "tools/list", params, nil))
		got := names(t, page, "tools")
		if len(got) > 2 {
			t.Fatalf("page %d holds %d items, over max_page_items 2: %v", pages+1, len(got), got)
		}
		all = append(all, got...)
		next, ok := cursorOf(page)
		if !ok {
			break
		}
		cursor = next
	}
	if len(all) != want {
		t.Fatalf("the walk returned %d tools, want %d: %v", len(all), want, all)
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != want {
		t.Fatalf("an item twice: %v", all)
	}
}

// A page asks only as many backends as its latest answers say will fill
// it (their pages' sizes, remembered per instance); the rest keep their
// place for later pages. The first walk asks every backend on its first
// page (nothing is known yet); a second walk asks each backend once,
// and both list every item once.
func TestPagination_PageAsksOnlyTheBackendsThatFillIt(t *testing.T) {
	opts := router.Options{MaxPageItems: 6}
	f, asked := countedBackends(t, opts, []string{"a", "b", "c", "d", "e"}, 3)
	sid, _ := f.Initialize(nil)
	walk := func() (pages int, all []string) {
		cursor := ""
		for pages = 1; ; pages++ {
			if pages > 20 {
				t.Fatal("pagination does not end")
			}
			var params map[string]any
			if cursor != "" {
				params = map[string]any{"cursor": cursor}
			}
			page := result(t, f.Call(sid, "tools/list", params))
			got := names(t, page, "tools")
			if len(got) > 6 {
				t.Fatalf("page %d holds %d items: %v", pages, len(got), got)
			}
			all = append(all, got...)
			next, ok := cursorOf(page)
			if !ok {
				return pages, all
			}
			cursor = next
		}
	}
	for i, wantAsked := range []int{5 + 4, 5} {
		before := asked()
		pages, all := walk()
		if len(all) != 5*6 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 5*6 {
			t.Fatalf("walk %d: %d tools, want each of 30 once: %v", i+1, len(all), all)
		}
		if pages != 5 {
			t.Errorf("walk %d: %d pages, want 5", i+1, pages)
		}
		// Walk 1: all five on page 1, then one a page (the size of each
		// is known from page 1). Walk 2: one a page.
		if got := asked() - before; got != wantAsked {
			t.Errorf("walk %d asked the backends %d times, want %d", i+1, got, wantAsked)
		}
	}
}

// A backend whose page is known not to fit whole in what is left of a
// gateway page waits for the next gateway page rather than being asked
// now, cut, and asked again for the rest: backends of 4 tools under
// max_page_items 10 make pages of 8, 8 and 4, each backend asked once a
// walk (the first walk, sizes unknown, asks all five at once and cuts).
func TestPagination_BackendThatWouldNotFitWaitsWhole(t *testing.T) {
	opts := router.Options{MaxPageItems: 10}
	f, asked := countedBackends(t, opts, []string{"a", "b", "c", "d", "e"}, 1)
	sid, _ := f.Initialize(nil)
	walk := func() (sizes []int, all []string) {
		cursor := ""
		for range 20 {
			var params map[string]any
			if cursor != "" {
				params = map[string]any{"cursor": cursor}
			}
			page := result(t, f.Call(sid, "tools/list", params))
			got := names(t, page, "tools")
			sizes, all = append(sizes, len(got)), append(all, got...)
			next, ok := cursorOf(page)
			if !ok {
				return sizes, all
			}
			cursor = next
		}
		t.Fatal("pagination does not end")
		return nil, nil
	}
	for i := range 3 {
		before := asked()
		sizes, all := walk()
		if len(all) != 20 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 20 {
			t.Fatalf("walk %d: %d tools, want each of 20 once: %v", i+1, len(all), all)
		}
		if i == 0 {
			continue
		}
		if !slices.Equal(sizes, []int{8, 8, 4}) {
			t.Errorf("walk %d: pages of %v items, want [8 8 4]", i+1, sizes)
		}
		if got := asked() - before; got != 5 {
			t.Errorf("walk %d asked the backends %d times, want 5 (once each)", i+1, got)
		}
	}
}

// On a fresh instance no backend's page size is known: each is expected
// to fill an eighth of the page, so a first page asks eight of ten
// backends, not all of them (concurrent walks would otherwise hold every
// backend's page at once), and the walk still lists everything once.
func TestPagination_FreshInstanceAsksEightUnseenBackends(t *testing.T) {
	opts := router.Options{MaxPageItems: 16}
	var keys []string
	for i := range 10 {
		keys = append(keys, string(rune('a'+i)))
	}
	f, asked := countedBackends(t, opts, keys, 3)
	sid, _ := f.Initialize(nil)
	page := result(t, f.Call(sid, "tools/list", nil))
	if got := asked(); got != 8 {
		t.Errorf("the first page asked %d backends, want 8", got)
	}
	all := names(t, page, "tools")
	for pages := 1; ; pages++ {
		cur, ok := cursorOf(page)
		if !ok {
			break
		}
		if pages > 20 {
			t.Fatal("pagination does not end")
		}
		page = result(t, f.Call(sid, "tools/list", map[string]any{"cursor": cur}))
		all = append(all, names(t, page, "tools")...)
	}
	if len(all) != 60 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 60 {
		t.Fatalf("%d tools, want each of 60 once: %v", len(all), all)
	}
}

// countedBackends is a fixture of one backend per key, each listing the
// demo's 3 tools and extra more on one page, and how many tools/list
// requests the backends have had so far.
func countedBackends(t *testing.T, opts router.Options, keys []string, extra int) (*fixture, func() int) {
	var specs []backendSpec
	for _, k := range keys {
		specs = append(specs, backendSpec{Key: k, Opts: testsupport.BackendOptions{PageSize: 50, ExtraTools: extra}})
	}
	f := newFixtureOpts(t, opts, specs...)
	return f, func() (n int) {
		for _, k := range keys {
			n += int(f.Backends[k].Count("tools/list"))
		}
		return n
	}
}
