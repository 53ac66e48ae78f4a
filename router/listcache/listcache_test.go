package listcache

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Concurrent misses share one fetch; a kept page is served until it is
// invalidated; a fetch under way when its backend is invalidated stores
// nothing; a page fetch says not to keep is not kept.
func TestCache(t *testing.T) {
	c := New[string]([]string{"a", "b"})
	var fetches atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	signal := sync.OnceFunc(func() { close(started) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if p := c.Page("k", "a", time.Hour, func() (string, bool) {
				fetches.Add(1)
				signal()
				<-release
				return "page", true
			}); p != "page" {
				t.Errorf("got %q", p)
			}
		})
	}
	<-started // the first miss is fetching; the others wait on it or join
	close(release)
	wg.Wait()
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 8 concurrent misses", n)
	}
	if p, ok := c.Lookup("k"); !ok || p != "page" || c.Held("a") != 1 {
		t.Fatalf("lookup: %q %v, held %d", p, ok, c.Held("a"))
	}
	c.Invalidate("a")
	if _, ok := c.Lookup("k"); ok || c.Held("a") != 0 {
		t.Fatal("an invalidated page is still served")
	}
	c.Page("k", "a", time.Hour, func() (string, bool) {
		c.Invalidate("a") // a list change while the page was fetched
		return "stale", true
	})
	if _, ok := c.Lookup("k"); ok {
		t.Fatal("a page fetched across an invalidation was kept")
	}
	c.Page("f", "b", time.Hour, func() (string, bool) { return "failed", false })
	if _, ok := c.Lookup("f"); ok {
		t.Fatal("a page fetch said not to keep was kept")
	}
}

// The key tells apart what a backend is sent of the client: only the
// passthrough headers count.
func TestKey(t *testing.T) {
	h1 := http.Header{"Authorization": {"Bearer one"}, "X-Other": {"1"}}
	h2 := http.Header{"Authorization": {"Bearer two"}, "X-Other": {"1"}}
	h3 := http.Header{"Authorization": {"Bearer one"}, "X-Other": {"2"}}
	pass := []string{"Authorization"}
	if Key("a", "tools/list", "", pass, h1) == Key("a", "tools/list", "", pass, h2) {
		t.Fatal("two tokens share a key")
	}
	if Key("a", "tools/list", "", pass, h1) != Key("a", "tools/list", "", pass, h3) {
		t.Fatal("a header the backend is not sent splits the key")
	}
	if Key("a", "tools/list", "", nil, h1) != Key("a", "tools/list", "", nil, h2) {
		t.Fatal("without passthrough headers the key depends on the client")
	}
	if Key("a", "tools/list", "c1", nil, h1) == Key("a", "tools/list", "", nil, h1) {
		t.Fatal("two cursors share a key")
	}
}

// A size hint is per backend and method, the latest one noted.
func TestSizeHint(t *testing.T) {
	c := New[string]([]string{"a", "b"})
	if _, ok := c.SizeHint("a", "tools/list"); ok {
		t.Error("a hint before any was noted")
	}
	c.NoteSize("a", "tools/list", 200)
	c.NoteSize("a", "tools/list", 150)
	c.NoteSize("a", "prompts/list", 3)
	if n, ok := c.SizeHint("a", "tools/list"); !ok || n != 150 {
		t.Errorf("a tools/list: %d, %t; want 150", n, ok)
	}
	if n, ok := c.SizeHint("a", "prompts/list"); !ok || n != 3 {
		t.Errorf("a prompts/list: %d, %t; want 3", n, ok)
	}
	if _, ok := c.SizeHint("b", "tools/list"); ok {
		t.Error("b has a hint")
	}
}
