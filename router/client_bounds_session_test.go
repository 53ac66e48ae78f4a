package router_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestSubscriptions_PastTheLimitsAreRefused(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)
	ctx := t.Context()
	// Loaded before the session filled up: a request racing the last
	// subscription passes the router's check, and the store refuses it.
	stale, err := f.Store.LoadSession(ctx, sid, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range store.MaxSubscriptions - 1 {
		if err := f.Store.AddSubscription(ctx, sid, fmt.Sprintf("gateway-two-test://r%d", i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-two-test://counter"}))

	backend := f.Backends["gateway-two"]
	for _, c := range []struct {
		name, uri, want string
		session         *store.Session // nil: the session as stored
		backendCalls    int
	}{
		{name: "one too many", uri: "gateway-two-test://more", want: "already has 100 subscriptions"},
		{name: "URI too long", uri: "gateway-two-test://" + strings.Repeat("x", store.MaxSubscriptionURIBytes), want: "longer than 1024 bytes"},
		{name: "one too many, racing", uri: "gateway-two-test://raced", session: stale, want: "already has 100 subscriptions", backendCalls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess := c.session
			if sess == nil {
				sess, _ = f.Store.LoadSession(ctx, sid, time.Hour)
			}
			before := backend.Count("resources/subscribe")
			params, _ := json.Marshal(map[string]any{"uri": c.uri})
			resp := f.Router.Handle(ctx, &router.Call{Caller: &router.SessionCaller{Session: sess}, Header: http.Header{},
				Request: &jsonrpc.Request{ID: mustID(9), Method: "resources/subscribe", Params: params}})
			if e := rpcErr(t, resp); e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, c.want) {
				t.Errorf("error %d %q, want -32602 saying %q", e.Code, e.Message, c.want)
			}
			if n := backend.Count("resources/subscribe") - before; n != c.backendCalls {
				t.Errorf("the backend saw %d subscribes, want %d", n, c.backendCalls)
			}
			if got, _ := f.Store.LoadSession(ctx, sid, time.Hour); len(got.Subscriptions) != store.MaxSubscriptions {
				t.Errorf("the session holds %d subscriptions, want %d", len(got.Subscriptions), store.MaxSubscriptions)
			}
		})
	}
	// At the limit, subscribing again to a URI the session holds is fine.
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-two-test://counter"}))
}

func TestInitialize_OversizedClientMetadataIsRefused(t *testing.T) {
	f := twoBackends(t)
	params := fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":{"experimental":{"x":%q}},"clientInfo":{"name":"t","version":"1"}}`,
		strings.Repeat("a", store.MaxClientMetadataBytes))
	sess, resp := f.Router.Initialize(t.Context(), f.VHost, "alice", nil,
		&jsonrpc.Request{ID: mustID(1), Method: "initialize", Params: json.RawMessage(params)})
	if e := rpcErr(t, resp); sess != nil || e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "over 16384 bytes") {
		t.Fatalf("initialize: session %v, error %d %q; want no session and -32602", sess, e.Code, e.Message)
	}
	for key, b := range f.Backends {
		if n := b.Count("initialize"); n != 0 {
			t.Errorf("backend %s was probed %d times for a refused initialize", key, n)
		}
	}
}
