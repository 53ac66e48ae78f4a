package session_test

import (
	"testing"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
)

// A `session: reuse` backend's notifications go to the client's own
// backend session, where its calls (and its resources/subscribe) ran: the
// GET stream's listener attaches to that session rather than opening one
// of its own, so the client hears them, and the client session costs the
// backend one session, not one per purpose.
func TestStream_ReuseBackendNotificationsReachTheClient(t *testing.T) {
	reuse := func(b *router.Backend) { b.Session = router.SessionReuse }
	f := routertest.New(t, redisSrv.URL(), options{},
		routertest.Spec{Key: "r", Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: reuse},
		routertest.Spec{Key: "p", Opts: testsupport.BackendOptions{StreamingTools: true}})
	r := f.Backends["r"]
	sid := f.InitCaps(`{}`)
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "r-test://counter"}))
	inits := r.Count("initialize")
	// The subscribe's listener-rebuild message is consumed before the
	// hold exists, so the hold's first set of listeners is its only one.
	busSettled(t, f.Instance)

	ev := openStream(t, f.Instance, sid, "")
	defer ev.Close()
	listenersUp(t, ev)
	if r.Count("GET") < 1 {
		t.Fatal("no listener on the reused backend")
	}
	if got := r.Count("initialize"); got != inits {
		t.Fatalf("the listener opened %d backend sessions of its own, want it on the client's", got-inits)
	}
	n := 0
	for range r.Server.Sessions() {
		n++
	}
	if n != 1 {
		t.Fatalf("the backend holds %d sessions for one client session, want 1", n)
	}
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	for {
		if _, n := nextEvent(t, ev); n.Method == "notifications/resources/updated" {
			if string(n.Params) != `{"uri":"r-test://counter"}` {
				t.Fatalf("update %s", n.Params)
			}
			break
		}
	}
}

// A subscribe or a log level rebuilds the listeners; a `session: reuse`
// backend's new listener wants the same backend session's stream as the
// old one, and the go-sdk serves one standalone stream a session (a second
// GET is answered 409). The rebuild must still leave the session heard
// once the old listener has stopped: an update the backend sends then
// reaches the client.
func TestStream_ReuseRebuildKeepsTheBackendHeard(t *testing.T) {
	reuse := func(b *router.Backend) { b.Session = router.SessionReuse }
	f := routertest.New(t, redisSrv.URL(), options{},
		routertest.Spec{Key: "r", Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: reuse},
		routertest.Spec{Key: "p", Opts: testsupport.BackendOptions{StreamingTools: true}})
	sid := f.InitCaps(`{}`)
	ev := openStream(t, f.Instance, sid, "")
	defer ev.Close()
	up := listenersUp(t, ev)

	rebuilds := []struct{ method, param, value string }{
		{"resources/subscribe", "uri", "r-test://counter"},
		{"logging/setLevel", "level", "debug"},
	}
	for _, rb := range rebuilds {
		result(t, f.Call(sid, rb.method, map[string]any{rb.param: rb.value}))
		up = listenersRebuilt(t, ev, up)
		waitClosed(t, session.ListenersDrained(ev), "the replaced listeners did not stop")
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
		for {
			if _, n := nextEvent(t, ev); n.Method == "notifications/resources/updated" {
				break
			}
		}
	}
	// The generations shared the one stream: none was refused a second.
	if n := f.Backends["r"].Count(testsupport.StreamRefused); n != 0 {
		t.Fatalf("the backend refused %d GETs on the client's session", n)
	}
}
