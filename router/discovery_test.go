package router_test

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// modernTools lists the vhost's tools as a 2026-07-28 client, which has no
// session: every backend's snapshot comes from the discovery cache.
func modernTools(ctx context.Context, t *testing.T, f *fixture) []string {
	t.Helper()
	return names(t, result(t, f.Router.Handle(ctx, &router.Call{VHost: f.VHost, Principal: "alice", Header: http.Header{},
		Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list"}, Caller: &router.ModernClient{}})), "tools")
}

var statelessBackend = testsupport.BackendOptions{Stateless: true}

// A backend's discovery is kept for its ttlMs, at least DiscoveryMinTTL (a
// go-sdk backend says 0): requests within it do not discover again, and
// once it has passed the next request refreshes it in the background
// (stale-while-revalidate: one refresh at a time, so 2 or 3 discoveries
// for 3 requests).
func TestDiscovery_CachedForTheMinimumTTL(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want int
	}{
		{"fresh for an hour", time.Hour, 1},
		{"stale at once", time.Nanosecond, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureOpts(t, router.Options{DiscoveryMinTTL: tc.ttl, DiscoveryMaxTTL: tc.ttl},
				backendSpec{Key: "modern", Opts: statelessBackend}, backendSpec{Key: "legacy"})
			for range 3 {
				if tools := modernTools(t.Context(), t, f); !slices.Contains(tools, "modern-echo") || !slices.Contains(tools, "legacy-echo") {
					t.Fatalf("tools %v, want both backends'", tools)
				}
			}
			for key, b := range f.Backends {
				b.WaitCount("server/discover", tc.want, 10*time.Second)
				if n := b.Count("server/discover"); n < tc.want || n > 1+(tc.want-1)*2 {
					t.Fatalf("%s was discovered %d times in 3 requests, want %d", key, n, tc.want)
				}
			}
			// The legacy backend was probed with initialize only when
			// discovered, and a stateless modern backend never.
			if n := f.Backends["modern"].Count("initialize"); n != 0 {
				t.Fatalf("the 2026-07-28 backend was initialized %d times", n)
			}
		})
	}
}

// A discovery that failed is kept for ReprobeInterval, not the discovery
// TTL: within it, a backend that came back is still skipped without being
// asked again; after it, the next request discovers it again (a list also
// re-probes a failed backend once it is due, reprobeDue, so this half
// holds by either path).
func TestDiscovery_FailureCachedForTheReprobeInterval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reprobe  time.Duration
		backUp   bool
		discover int
	}{
		{"within the interval", time.Hour, false, 1},
		{"after the interval", time.Nanosecond, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureOpts(t, router.Options{ReprobeInterval: tc.reprobe, DiscoveryMinTTL: time.Hour},
				backendSpec{Key: "flaky", Opts: statelessBackend}, backendSpec{Key: "steady", Opts: statelessBackend})
			f.Backends["flaky"].SetDown(true)
			if tools := modernTools(t.Context(), t, f); slices.Contains(tools, "flaky-echo") || !slices.Contains(tools, "steady-echo") {
				t.Fatalf("tools %v with flaky down, want steady's only", tools)
			}
			f.Backends["flaky"].SetDown(false)
			if tools := modernTools(t.Context(), t, f); slices.Contains(tools, "flaky-echo") != tc.backUp {
				t.Fatalf("tools %v once flaky is back: flaky listed = %v, want %v", tools, !tc.backUp, tc.backUp)
			}
			if n := f.Backends["flaky"].Count("server/discover"); n != tc.discover {
				t.Fatalf("flaky was discovered %d times, want %d", n, tc.discover)
			}
			if n := f.Backends["steady"].Count("server/discover"); n != 1 {
				t.Fatalf("steady was discovered %d times, want 1 (its discovery is fresh)", n)
			}
		})
	}
}

// gatedFront is a proxy to backend that holds each server/discover until
// release is closed, reporting each on arrived.
func gatedFront(t *testing.T, backend string) (frontURL string, arrived <-chan struct{}, release func()) {
	t.Helper()
	gate := make(chan struct{})
	arrivals := make(chan struct{}, 64)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(gate) }) })
	return quirkyFront(t, backend, func(w http.ResponseWriter, r *http.Request) {
		arrivals <- struct{}{}
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		u, _ := url.Parse(backend)
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}).ServeHTTP(w, r)
	}), arrivals, func() { once.Do(func() { close(gate) }) }
}

// Requests that find a backend undiscovered share one discovery: while it
// runs, no other request sends its own server/discover. A waiter that
// gives up (its context ends) returns at once, and the discovery, detached
// from it, still completes and serves the next request from the cache.
func TestDiscovery_OneProbeForEveryWaiter(t *testing.T) {
	var arrived <-chan struct{}
	var release func()
	f := newFixtureOpts(t, router.Options{DiscoveryMinTTL: time.Hour}, backendSpec{Key: "slow", Opts: statelessBackend,
		Adjust: func(b *router.Backend) { b.URL, arrived, release = gatedFront(t, b.URL) }})

	// The first request starts the discovery and gives up while it is held.
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan *jsonrpc.Response, 1)
	go func() {
		gaveUp <- f.Router.Handle(ctx, &router.Call{VHost: f.VHost, Principal: "alice", Header: http.Header{},
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list"}, Caller: &router.ModernClient{}})
	}()
	<-arrived
	cancel()
	select {
	case <-gaveUp:
	case <-time.After(10 * time.Second):
		t.Fatal("a request whose context ended still waits for the discovery")
	}

	// Others arrive while it is still held: they wait for it, and none
	// sends a probe of its own. Nothing signals that a waiter has joined
	// the flight, so the gate opens after a short while; a request that
	// probed for itself would have reached the front by then.
	const waiters = 4
	var wg sync.WaitGroup
	lists := make([][]string, waiters)
	for i := range waiters {
		wg.Go(func() { lists[i] = modernTools(t.Context(), t, f) })
	}
	extra := 0
	timer := time.NewTimer(300 * time.Millisecond)
wait:
	for {
		select {
		case <-arrived:
			extra++
		case <-timer.C:
			break wait
		}
	}
	release()
	wg.Wait()
	if extra != 0 {
		t.Fatalf("%d more server/discover reached the backend while one was under way", extra)
	}
	for i, tools := range lists {
		if !slices.Contains(tools, "echo") {
			t.Fatalf("waiter %d listed %v, want the backend's tools", i, tools)
		}
	}
	if n := f.Backends["slow"].Count("server/discover"); n != 1 {
		t.Fatalf("the backend answered %d server/discover, want 1", n)
	}
}
