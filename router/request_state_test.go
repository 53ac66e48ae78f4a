package router

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The router's side of request states: an input_required result leaves
// with the gateway's envelope in place of the backend's state (in-band
// answers get their resultType), and the retry reaches the backend with
// the backend's own state, only for the backend, caller and request it
// was issued for.
func TestRequestState_SealedOnTheWayOutOpenedOnTheWayIn(t *testing.T) {
	v := offlineVHost(t, "one", "two")
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	call := func(principal, name string, params map[string]any) (*Call, *target) {
		params["name"] = name
		raw, _ := json.Marshal(params)
		c := &Call{VHost: "v", Principal: principal, Caller: &SessionCaller{Session: &store.Session{VHost: "v", Principal: principal}}, Request: &jsonrpc.Request{Method: "tools/call", Params: raw}}
		tg, err := r.calls.resolve(v, "tools/call", raw)
		if err != nil {
			t.Fatal(err.Message)
		}
		return c, tg
	}
	c, tg := call("alice", "one-ask", map[string]any{})
	for _, result := range []string{
		`{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create"}},"requestState":"backend-s1"}`,
		`{"inputRequests":{"q":{"method":"elicitation/create"}},"requestState":"backend-s1"}`, // in band
	} {
		out, asks, err := r.calls.sealRequestState(t.Context(), v, c, tg, json.RawMessage(result))
		if err != nil || !asks {
			t.Fatalf("sealed: %v %v", asks, err)
		}
		var m struct {
			ResultType, RequestState string
		}
		_ = json.Unmarshal(out, &m)
		if m.ResultType != "input_required" || m.RequestState == "" || strings.Contains(string(out), "backend-s1") {
			t.Fatalf("the client sees %s", out)
		}
		retry := func(principal, name string) (*target, *jsonrpc.Response) {
			c, tg := call(principal, name, map[string]any{"requestState": m.RequestState})
			return tg, r.calls.openRequestState(t.Context(), v, c, tg)
		}
		tg2, refused := retry("alice", "one-ask")
		if refused != nil || string(tg2.params["requestState"]) != `"backend-s1"` {
			t.Fatalf("the retry: %+v, params %s", refused, tg2.params["requestState"])
		}
		for who, name := range map[string]string{"bob": "one-ask", "alice": "two-ask"} {
			if _, refused := retry(who, name); refused == nil || rpcErrOf(refused).Code != CodeInvalidParams {
				t.Fatalf("%s calling %s with alice's state for one-ask: %+v", who, name, refused)
			}
		}
	}
	complete := json.RawMessage(`{"content":[]}`)
	if out, asks, err := r.calls.sealRequestState(t.Context(), v, c, tg, complete); asks || err != nil || string(out) != string(complete) {
		t.Fatalf("a complete result: %s %v %v", out, asks, err)
	}
}
