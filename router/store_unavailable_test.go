package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// stalledFixture is a router on a Redis of its own, with a short store
// timeout, and a session opened on it; pause stops that Redis (SIGSTOP)
// until the test ends.
func stalledFixture(t *testing.T) (f *fixture, sess *store.Session, pause func()) {
	t.Helper()
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	st, err := store.NewRedis(rs.URL(), store.RedisOptions{KeyPrefix: "stall", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f = newFixtureOpts(t, router.Options{Store: st},
		backendSpec{Key: "gateway-one", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
		backendSpec{Key: "gateway-two"},
	)
	sid, _ := f.Initialize(nil)
	if sess, err = st.LoadSession(t.Context(), sid, time.Hour); err != nil {
		t.Fatal(err)
	}
	return f, sess, func() {
		if err := rs.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rs.Resume() })
	}
}

// handleWithin runs one request of sess, failing the test if it is not
// answered within a bound many times the store timeout.
func handleWithin(t *testing.T, r *router.Router, sess *store.Session, method string, params any) *jsonrpc.Response {
	t.Helper()
	raw, _ := json.Marshal(params)
	done := make(chan *jsonrpc.Response, 1)
	go func() {
		done <- r.Handle(context.Background(), &router.Call{Caller: &router.SessionCaller{Session: sess}, Header: http.Header{},
			Request: &jsonrpc.Request{ID: mustID(3), Method: method, Params: raw}})
	}()
	select {
	case resp := <-done:
		return resp
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still unanswered with the store stalled", method)
		return nil
	}
}

// A request whose store write fails is answered -32603 "session store
// unavailable", marked so the transport answers HTTP 503.
func TestStoreUnavailable_FailsTheRequestMarkedFor503(t *testing.T) {
	f, sess, pause := stalledFixture(t)
	page2, _ := cursorOf(result(t, f.Call(sess.ID, "tools/list", nil)))
	pause()
	for _, c := range []struct {
		name, method string
		params       any
	}{
		{"log level", "logging/setLevel", map[string]any{"level": "debug"}},
		{"subscription", "resources/subscribe", map[string]any{"uri": "gateway-two-test://counter"}},
		{"signing a cursor", "tools/list", nil},
		{"an unknown cursor, after the keys known here", "tools/list", map[string]any{"cursor": tamper(page2)}},
	} {
		resp := handleWithin(t, f.Router, sess, c.method, c.params)
		if e := rpcErr(t, resp); e.Code != router.CodeInternalError || e.Message != "session store unavailable" || !router.StoreUnavailable(resp) {
			t.Errorf("%s: %d %q (marked %v), want -32603 session store unavailable, marked", c.name, e.Code, e.Message, router.StoreUnavailable(resp))
		}
	}
	req := &jsonrpc.Request{ID: mustID(1), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
	got, resp := f.Router.Initialize(context.Background(), f.VHost, "alice", nil, req)
	if e := rpcErr(t, resp); got != nil || e.Message != "session store unavailable" || !router.StoreUnavailable(resp) {
		t.Errorf("initialize: session %v, %d %q (marked %v)", got, e.Code, e.Message, router.StoreUnavailable(resp))
	}
}
