package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Discovery never blocks a request on a backend it does not use (issue
// 36): a vhost with a backend that takes 2 s to answer every discovery
// and a fast one, its discovery trusted for 1 s only, so the slow one is
// refreshed again and again while a 2026-07-28 client calls the fast one
// on both instances. No call waits on the slow refresh: each is well
// under the 2 s it takes (a generous bound on a loaded machine: 1 s).
func TestDiscovery_FastBackendNeverWaitsOnASlowOnesRefresh(t *testing.T) {
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	slow := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "slow", Stateless: true, DelayDiscovery: 2 * time.Second})
	fast := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "fast", Stateless: true})
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(fmt.Sprintf("discovery: {min_ttl: 1s, max_ttl: 1s}\n%s  demo:\n    backends:\n      slow: {url: %q}\n      fast: {url: %q}\n",
		configHead(), slow.URL, fast.URL))
	a, b := c.start(), c.start()
	cl := c.client("alice")
	call := func(ep testsupport.Endpoint) time.Duration {
		start := time.Now()
		r := cl.ModernRequest(ep, "tools/call", map[string]any{"name": "fast-echo", "arguments": map[string]any{"text": "hi"}}, nil)
		took := time.Since(start)
		if !strings.Contains(r.Text(), "hi") {
			t.Fatalf("fast-echo answered %s", r.Body)
		}
		return took
	}
	// The first call on each instance knows nothing yet: it waits for the
	// fast backend's discovery only.
	for _, ep := range []testsupport.Endpoint{a, b} {
		if took := call(ep); took > time.Second {
			t.Fatalf("a first call to the fast backend took %v: it waited on the slow one's discovery", took)
		}
	}
	// Then for several refresh periods of the slow backend.
	deadline := time.Now().Add(45 * time.Second)
	for i := 0; !slow.WaitCount("server/discover", 6, 0) || i < 20; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the slow backend was discovered %d times in 45 s, want 6", slow.Count("server/discover"))
		}
		if took := call([]testsupport.Endpoint{a, b}[i%2]); took > time.Second {
			t.Fatalf("call %d to the fast backend took %v while the slow one was refreshed", i, took)
		}
	}
}
