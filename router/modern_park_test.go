package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// parkFixture is a vhost over one 2025-era (session) go-sdk backend whose
// tool "confirm" asks the client with a real elicitation request.
func parkFixture(t *testing.T, opts router.Options) *fixture {
	t.Helper()
	return newFixtureOpts(t, opts, backendSpec{Key: "legacy", Opts: testsupport.BackendOptions{StreamingTools: true}})
}

// modernCall is a 2026-07-28 tools/call of name by principal, whose client
// declared elicitation, with parks holding calls that park; extra adds to
// the params (requestState, inputResponses).
func modernCall(t *testing.T, r *router.Router, vhost, principal string, parks router.ParkRuntime, name string, extra map[string]any) *jsonrpc.Response {
	t.Helper()
	caps := json.RawMessage(`{"elicitation":{}}`)
	params := map[string]any{"name": name, "arguments": map[string]any{"question": "proceed?"}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
	for k, v := range extra {
		params[k] = v
	}
	raw, _ := json.Marshal(params)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return r.Handle(ctx, &router.Call{VHost: vhost, Principal: principal, Header: http.Header{},
		Request: &jsonrpc.Request{ID: mustID(5), Method: "tools/call", Params: raw},
		Modern:  &router.ModernClient{ClientCapabilities: caps, Parks: parks}})
}

// inputRequired checks res asks the client for input and returns the key
// of its one input request and its requestState.
func inputRequired(t *testing.T, res map[string]any) (key, state string) {
	t.Helper()
	if res["resultType"] != "input_required" {
		t.Fatalf("result %s: want input_required", toJSON(res))
	}
	ins, _ := res["inputRequests"].(map[string]any)
	if len(ins) != 1 {
		t.Fatalf("inputRequests %s: want one", toJSON(res["inputRequests"]))
	}
	for k, in := range ins {
		if m, _ := in.(map[string]any); m["method"] != "elicitation/create" || !strings.Contains(toJSON(m["params"]), "proceed?") {
			t.Fatalf("input request %s: want the backend's elicitation", toJSON(in))
		}
		key = k
	}
	state, _ = res["requestState"].(string)
	if state == "" {
		t.Fatalf("result %s has no requestState", toJSON(res))
	}
	return key, state
}

func accept(key string) map[string]any {
	return map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
}

// A 2026-07-28 call to a 2025-era backend that elicits is parked: the
// client gets input_required with the backend's request and a sealed
// state, and its retry with the answer gets the call's result, from the
// same backend call (the backend saw one tools/call).
func TestModernPark_ParkedCallCompletesOnRetry(t *testing.T) {
	f := parkFixture(t, router.Options{})
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm", nil)))

	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if got := text(t, res); got != "user chose accept map[ok:true]" {
		t.Fatalf("the parked call answered %q", got)
	}
	if res["resultType"] != "complete" {
		t.Fatalf("result %s: want resultType complete", toJSON(res))
	}
	if n := f.Backends["legacy"].Count("tools/call"); n != 1 {
		t.Fatalf("the backend saw %d tools/call, want the parked one only", n)
	}
}

// A retry's requestState must be the one issued to this principal, for
// this call, unaltered: another principal's, or a tampered one, is
// refused and never reaches the parked call.
func TestModernPark_RetryWithForeignOrTamperedStateIsRefused(t *testing.T) {
	f := parkFixture(t, router.Options{})
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm", nil)))
	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 1

	for name, tc := range map[string]struct{ principal, state string }{
		"another principal": {"bob", state},
		"tampered":          {"alice", string(tampered)},
	} {
		t.Run(name, func(t *testing.T) {
			e := rpcErr(t, modernCall(t, f.Router, f.VHost, tc.principal, f.Sessions, "confirm",
				map[string]any{"requestState": tc.state, "inputResponses": accept(key)}))
			if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "requestState") {
				t.Fatalf("got %d %q, want -32602 refusing the requestState", e.Code, e.Message)
			}
		})
	}
	// The parked call was left alone: alice's own retry still completes it.
	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if got := text(t, res); !strings.Contains(got, "accept") {
		t.Fatalf("alice's retry answered %q", got)
	}
}

// A requestState sealed for one backend, presented for the same public
// name once it routes to another backend (the vhost was reloaded), is
// refused before it reaches any parked call.
func TestModernPark_StateOfAnotherBackendIsRefused(t *testing.T) {
	f := parkFixture(t, router.Options{})
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm", nil)))

	other := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "other", StreamingTools: true})
	cfg := *f.Config.Backends["legacy"]
	cfg.Key, cfg.URL = "other", other.URL
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: {Name: f.VHost, Backends: map[string]*router.Backend{"other": &cfg}}})

	e := rpcErr(t, modernCall(t, f.Router, f.VHost, "alice", f.Sessions, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "not issued for this request") {
		t.Fatalf("got %d %q, want -32602: not issued for this request", e.Code, e.Message)
	}
	if n := other.Count("tools/call"); n != 0 {
		t.Fatalf("the other backend saw %d tools/call", n)
	}
}

// refusingParks is a park runtime that refuses every call with its
// outcome, as the session runtime does when a principal has parked the
// most calls it may; it never runs the call.
type refusingParks struct {
	outcome router.ParkOutcome
	ran     atomic.Int32
}

func (p *refusingParks) Run(context.Context, router.ParkedCall, func(context.Context, router.SessionRuntime) *jsonrpc.Response) router.ParkOutcome {
	p.ran.Add(1)
	return p.outcome
}

func (p *refusingParks) Resume(context.Context, router.ParkedCall, store.SessionID, int, map[string]json.RawMessage) router.ParkOutcome {
	return p.outcome
}

// A runtime's refusal with a RetryAfter is HTTP 429 with that Retry-After;
// one without is the runtime's error as is, not a 429.
func TestModernPark_RuntimeRefusals(t *testing.T) {
	f := parkFixture(t, router.Options{})
	bound := &refusingParks{outcome: router.ParkOutcome{Err: &jsonrpc.Error{Code: router.CodeInternalError, Message: "too many parked calls"}, RetryAfter: 3 * time.Second}}
	resp := modernCall(t, f.Router, f.VHost, "alice", bound, "confirm", nil)
	if e := rpcErr(t, resp); !strings.Contains(e.Message, "too many parked calls") {
		t.Fatalf("got %q, want the runtime's error", e.Message)
	}
	if wait, ok := router.RateLimited(resp); !ok || wait != 3*time.Second {
		t.Fatalf("RateLimited = %v %v, want 429 with Retry-After 3s", wait, ok)
	}
	if bound.ran.Load() != 1 {
		t.Fatalf("the runtime was asked to run %d calls, want 1", bound.ran.Load())
	}

	gone := &refusingParks{outcome: router.ParkOutcome{Err: &jsonrpc.Error{Code: router.CodeInvalidParams, Message: "the parked call ended"}}}
	resp = modernCall(t, f.Router, f.VHost, "alice", gone, "confirm", nil)
	if e := rpcErr(t, resp); e.Code != router.CodeInvalidParams || e.Message != "the parked call ended" {
		t.Fatalf("got %d %q, want the runtime's error unchanged", e.Code, e.Message)
	}
	if _, limited := router.RateLimited(resp); limited {
		t.Fatal("an error with no RetryAfter was answered 429")
	}
}

// waitingParks is a park runtime whose call waits for the client at once
// (its outcome asks for input), without running it.
type waitingParks struct{}

func (waitingParks) Run(context.Context, router.ParkedCall, func(context.Context, router.SessionRuntime) *jsonrpc.Response) router.ParkOutcome {
	return router.ParkOutcome{Park: "park-1", Round: 1, Input: map[string]router.InputRequest{
		"q": {Method: "elicitation/create", Params: json.RawMessage(`{"message":"proceed?"}`)}}}
}

func (waitingParks) Resume(context.Context, router.ParkedCall, store.SessionID, int, map[string]json.RawMessage) router.ParkOutcome {
	return router.ParkOutcome{Err: &jsonrpc.Error{Code: router.CodeInternalError, Message: "unexpected resume"}}
}

// When the store cannot give the key that seals the round's requestState,
// the call is answered store unavailable (HTTP 503), never an
// input_required the client could not retry.
func TestModernPark_StoreFailingToSealIsUnavailable(t *testing.T) {
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	st, err := store.NewRedis(rs.URL(), store.RedisOptions{KeyPrefix: "park", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := parkFixture(t, router.Options{Store: st})
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })

	resp := modernCall(t, f.Router, f.VHost, "alice", waitingParks{}, "confirm", nil)
	if e := rpcErr(t, resp); !router.StoreUnavailable(resp) || e.Message != wire.MsgStoreUnavailable {
		t.Fatalf("got %s, want store unavailable (503)", toJSON(resp))
	}
}
