package router_test

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Stale-while-revalidate (issue 36): a stale discovery serves while it is
// refreshed in the background, and a request never waits on the refresh
// of a backend, its target or not.

// modernEcho calls backend key's echo tool as a 2026-07-28 client.
func modernEcho(ctx context.Context, t *testing.T, f *fixture, key string) *jsonrpc.Response {
	t.Helper()
	return f.Router.Handle(ctx, &router.Call{VHost: f.VHost, Principal: "alice", Header: http.Header{},
		Request: &jsonrpc.Request{ID: mustID(2), Method: "tools/call",
			Params: []byte(`{"name":"` + key + `-echo","arguments":{"text":"hi"}}`)},
		Caller: &router.ModernClient{}})
}

// The slow backend's first discovery passes; every later one is held
// until the test ends. A call to the fast backend, and one to the slow
// backend itself, both answer while the slow backend's refresh is held.
func TestDiscovery_StaleServesWhileARefreshIsHeld(t *testing.T) {
	var discovers atomic.Int32
	refreshing := make(chan struct{}, 16)
	held := make(chan struct{})
	t.Cleanup(func() { close(held) })
	f := newFixtureOpts(t, router.Options{DiscoveryMinTTL: time.Nanosecond, DiscoveryMaxTTL: time.Nanosecond},
		backendSpec{Key: "slow", Opts: statelessBackend, Adjust: func(b *router.Backend) {
			backend := b.URL
			b.URL = quirkyFront(t, backend, func(w http.ResponseWriter, r *http.Request) {
				if discovers.Add(1) > 1 {
					refreshing <- struct{}{}
					select {
					case <-held:
					case <-r.Context().Done():
					}
					return
				}
				u, _ := url.Parse(backend)
				httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host}).ServeHTTP(w, r)
			})
		}},
		backendSpec{Key: "fast", Opts: statelessBackend})
	modernTools(t.Context(), t, f) // both discovered, stale at once
	for _, key := range []string{"fast", "slow"} {
		resp := modernEcho(t.Context(), t, f, key)
		if resp.Error != nil || !strings.Contains(string(resp.Result), "hi") {
			t.Fatalf("%s-echo while slow's refresh is held: %s %v", key, resp.Result, resp.Error)
		}
		if key == "fast" {
			<-refreshing // the first stale read started it; it is still held
		}
	}
	if n := discovers.Load(); n != 2 {
		t.Fatalf("slow was discovered %d times, want 2: one refresh at a time", n)
	}
}

// A refresh that fails keeps the healthy entry: calls to the backend go on
// (the failure shows in its status), and the next refresh waits for the
// reprobe interval.
func TestDiscovery_FailedRefreshKeepsTheHealthyEntry(t *testing.T) {
	f := newFixtureOpts(t, router.Options{DiscoveryMinTTL: time.Nanosecond, DiscoveryMaxTTL: time.Nanosecond, ReprobeInterval: time.Hour},
		backendSpec{Key: "flaky", Opts: statelessBackend}, backendSpec{Key: "steady", Opts: statelessBackend})
	modernTools(t.Context(), t, f)
	b := f.Backends["flaky"]
	b.FailMethod("server/discover", -1)
	b.FailMethod("initialize", -1)
	if resp := modernEcho(t.Context(), t, f, "flaky"); resp.Error != nil {
		t.Fatalf("a call as the refresh starts: %v", resp.Error)
	}
	if !b.WaitCount("initialize", 1, 10*time.Second) {
		t.Fatal("no refresh was tried")
	}
	for range 3 {
		if resp := modernEcho(t.Context(), t, f, "flaky"); resp.Error != nil {
			t.Fatalf("a call after the failed refresh: %v", resp.Error)
		}
	}
	if n := b.Count("server/discover"); n != 2 {
		t.Fatalf("discovered %d times, want 2: the failed refresh waits for the reprobe interval", n)
	}
}
