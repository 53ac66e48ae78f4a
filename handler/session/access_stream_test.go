package session_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/policy"
)

// A reload whose access rules hide a subscribed resource ends the updates
// that subscription brought: the rebuilt listeners, judged by the claims of
// the GET request holding the stream, no longer subscribe to it at its
// backend, while a resource still visible keeps its updates coming.
func TestStream_ReloadHidingASubscribedResourceEndsItsUpdates(t *testing.T) {
	f := streamingFixture(t, options{})
	alice, admin := map[string]any{"sub": "alice"}, map[string]any{"sub": "admin"}
	reloadWith := func(aliceSees string) {
		t.Helper()
		policy, err := policy.CompileAccess([]policy.AccessRule{
			{When: "claims.sub == 'admin'", Allow: []string{"*"}},
			{When: "claims.sub == 'alice'", Allow: []string{aliceSees}},
		})
		if err != nil {
			t.Fatal(err)
		}
		next := *f.Config
		next.Access = policy
		f.Sessions.VHostsChanged(f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &next}))
	}
	reloadWith("*")
	sid := f.InitCaps(`{}`)
	for _, uri := range []string{"gateway-one-test://counter", "gateway-two-test://counter"} {
		result(t, f.Instance.CallClaims(t, sid, alice, "resources/subscribe", map[string]any{"uri": uri}))
	}
	busSettled(t, f.Instance)
	ctx := credentials.WithCaller(context.Background(), credentials.Caller{Principal: "alice", Claims: alice})
	ev, err := f.Sessions.OpenStream(ctx, f.Instance.Load(t, sid), http.Header{}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	up := listenersUp(t, ev)
	// update skips list changes and returns the next update's params.
	update := func() string {
		t.Helper()
		for {
			if _, n := nextEvent(t, ev); n.Method == "notifications/resources/updated" {
				return string(n.Params)
			}
		}
	}
	result(t, f.Instance.CallClaims(t, sid, alice, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	if got := update(); got != `{"uri":"gateway-one-test://counter"}` {
		t.Fatalf("update %s, want gateway-one's counter", got)
	}

	subsOne, subsTwo := listenerSubscribes(t, f)
	reloadWith("gateway-two-*")
	listenersRebuilt(t, ev, up)
	wantRebuiltOnlyForGatewayTwo(t, f, subsOne, subsTwo)
	// gateway-one's counter changes first, gateway-two's second: only the
	// second reaches alice's stream.
	result(t, f.Instance.CallClaims(t, sid, admin, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	result(t, f.Instance.CallClaims(t, sid, alice, "tools/call", map[string]any{"name": "gateway-two-increment"}))
	if got := update(); got != `{"uri":"gateway-two-test://counter"}` {
		t.Fatalf("update %s, want only gateway-two's counter", got)
	}
}

// A client that re-attaches to the session's stream with another token
// (refreshed, with other claims) gets the listeners rebuilt as the new
// caller: what the new claims hide is no longer subscribed at the backend.
func TestStream_ReattachWithOtherClaimsRebuildsTheListeners(t *testing.T) {
	f := streamingFixture(t, options{})
	policy, err := policy.CompileAccess([]policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "'dev' in claims.groups", Allow: []string{"gateway-two-*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	next := *f.Config
	next.Access = policy
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &next})

	admin := credentials.Caller{Principal: "alice", Token: "t1", Claims: map[string]any{"groups": []any{"admins"}}}
	dev := credentials.Caller{Principal: "alice", Token: "t2", Claims: map[string]any{"groups": []any{"dev"}}}
	sid := f.InitCaps(`{}`)
	for _, uri := range []string{"gateway-one-test://counter", "gateway-two-test://counter"} {
		result(t, f.Instance.CallClaims(t, sid, admin.Claims, "resources/subscribe", map[string]any{"uri": uri}))
	}
	busSettled(t, f.Instance)
	attach := func(c credentials.Caller) *session.SessionEvents {
		t.Helper()
		ev, err := f.Sessions.OpenStream(credentials.WithCaller(context.Background(), c), f.Instance.Load(t, sid), http.Header{}, "")
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := attach(admin)
	up := listenersUp(t, ev)
	subsOne, subsTwo := listenerSubscribes(t, f)
	ev.Close() // the hold lingers

	ev = attach(dev)
	defer ev.Close()
	listenersRebuilt(t, ev, up)
	wantRebuiltOnlyForGatewayTwo(t, f, subsOne, subsTwo)
}

// listenerSubscribes waits until each backend has seen both subscribes of
// its counter, the client's call's and the first listener's, and returns
// the counts: read before the listener's subscribe arrived, a count would
// make its late arrival look like a rebuild's.
func listenerSubscribes(t *testing.T, f *fixture) (subsOne, subsTwo int) {
	t.Helper()
	one, two := f.Backends["gateway-one"], f.Backends["gateway-two"]
	if !one.WaitCount("resources/subscribe", 2, waitFor) || !two.WaitCount("resources/subscribe", 2, waitFor) {
		t.Fatalf("the listeners did not subscribe: %d and %d subscribes", one.Count("resources/subscribe"), two.Count("resources/subscribe"))
	}
	return one.Count("resources/subscribe"), two.Count("resources/subscribe")
}

// wantRebuiltOnlyForGatewayTwo checks, once the rebuilt listeners are up
// (a listener replays its subscriptions before it listens), that they
// subscribed gateway-two's counter again and not gateway-one's, which the
// new view hides; subsOne and subsTwo are the backends' subscribe counts
// before the rebuild.
func wantRebuiltOnlyForGatewayTwo(t *testing.T, f *fixture, subsOne, subsTwo int) {
	t.Helper()
	one, two := f.Backends["gateway-one"], f.Backends["gateway-two"]
	if n := one.Count("resources/subscribe"); n != subsOne {
		t.Fatalf("gateway-one's counter, now hidden, was subscribed again (%d subscribes, was %d)", n, subsOne)
	}
	if n := two.Count("resources/subscribe"); n <= subsTwo {
		t.Fatalf("gateway-two's counter was not subscribed again: %d subscribes, was %d", n, subsTwo)
	}
}
