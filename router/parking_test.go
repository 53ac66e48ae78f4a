package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/redis/go-redis/v9"
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
func modernCall(t *testing.T, r *router.Router, vhost, principal string, parks *router.Parking, name string, extra map[string]any) *jsonrpc.Response {
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
		Caller:  &router.ModernClient{ClientCapabilities: caps, Parks: parks}})
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
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm", nil)))

	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
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
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm", nil)))
	tampered := []byte(state)
	tampered[len(tampered)/2] ^= 1

	for name, tc := range map[string]struct{ principal, state string }{
		"another principal": {"bob", state},
		"tampered":          {"alice", string(tampered)},
	} {
		t.Run(name, func(t *testing.T) {
			e := rpcErr(t, modernCall(t, f.Router, f.VHost, tc.principal, f.Parks, "confirm",
				map[string]any{"requestState": tc.state, "inputResponses": accept(key)}))
			if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "requestState") {
				t.Fatalf("got %d %q, want -32602 refusing the requestState", e.Code, e.Message)
			}
		})
	}
	// The parked call was left alone: alice's own retry still completes it.
	res := result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
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
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm", nil)))

	other := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "other", StreamingTools: true})
	cfg := *f.Config.Backends["legacy"]
	cfg.Key, cfg.URL = "other", other.URL
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: {Name: f.VHost, Backends: map[string]*router.Backend{"other": &cfg}}})

	e := rpcErr(t, modernCall(t, f.Router, f.VHost, "alice", f.Parks, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "not issued for this request") {
		t.Fatalf("got %d %q, want -32602: not issued for this request", e.Code, e.Message)
	}
	if n := other.Count("tools/call"); n != 0 {
		t.Fatalf("the other backend saw %d tools/call", n)
	}
}

// parking is a Parking of its own on st, closed when the test ends.
func parking(t *testing.T, opts router.ParkOptions) *router.Parking {
	t.Helper()
	p, err := router.NewParking(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A principal with the most calls parked it may (limits
// parked_calls_per_principal) has its next call that asks refused with
// HTTP 429, -32029 naming the limit and a Retry-After, and that call is
// cancelled at the backend; another principal still parks, and so does
// the first once its parked call is answered. A runtime that is shut
// down refuses with its error, not 429.
func TestModernPark_Refusals(t *testing.T) {
	f := newFixtureOpts(t, router.Options{}, backendSpec{Key: "legacy", Opts: testsupport.BackendOptions{StreamingTools: true}})
	one := parking(t, router.ParkOptions{Store: f.Store, PerPrincipal: 1})
	key, state := inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", one, "confirm", nil)))

	resp := modernCall(t, f.Router, f.VHost, "alice", one, "confirm", nil)
	if e := rpcErr(t, resp); e.Code != router.CodeRateLimited || !strings.Contains(e.Message, "limits.parked_calls_per_principal") {
		t.Fatalf("got %d %q, want -32029 naming the limit", e.Code, e.Message)
	}
	if wait, ok := router.RateLimited(resp); !ok || wait != 10*time.Second {
		t.Fatalf("RateLimited = %v %v, want 429 with Retry-After 10s", wait, ok)
	}
	if n := f.Backends["legacy"].Count("tools/call"); n != 2 {
		t.Fatalf("the backend saw %d tools/call, want 2: the refused call had started (it is refused when it asks)", n)
	}
	inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "bob", one, "confirm", nil)))
	res := result(t, modernCall(t, f.Router, f.VHost, "alice", one, "confirm",
		map[string]any{"requestState": state, "inputResponses": accept(key)}))
	if got := text(t, res); !strings.Contains(got, "accept") {
		t.Fatalf("alice's retry answered %q", got)
	}
	inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", one, "confirm", nil)))

	closed := parking(t, router.ParkOptions{Store: f.Store})
	closed.Close()
	resp = modernCall(t, f.Router, f.VHost, "alice", closed, "confirm", nil)
	if e := rpcErr(t, resp); e.Code != router.CodeInternalError || e.Message != "the gateway is shutting down" {
		t.Fatalf("got %d %q, want the runtime's -32603", e.Code, e.Message)
	}
	if _, limited := router.RateLimited(resp); limited {
		t.Fatal("a shut-down runtime's refusal was answered 429")
	}
}

// A call that never asks the client anything costs no store write: the
// parked-call machinery stores a call only once it asks.
func TestModernPark_CallThatNeverAsksStoresNothing(t *testing.T) {
	f := parkFixture(t, router.Options{})
	rs, err := store.NewRedis(f.RedisURL, store.RedisOptions{KeyPrefix: f.Prefix + "-quiet"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	p := parking(t, router.ParkOptions{Store: rs})
	res := result(t, modernCall(t, f.Router, f.VHost, "alice", p, "progress", map[string]any{"arguments": map[string]any{"steps": 2}}))
	if got := text(t, res); got != "done" || res["resultType"] != "complete" {
		t.Fatalf("the call answered %s", toJSON(res))
	}
	if keys := redisKeys(t, f.RedisURL, f.Prefix+"-quiet"); len(keys) != 0 {
		t.Fatalf("a call that never asked stored %v", keys)
	}
	// The same store does hold a call that asks (the check can fail).
	inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", p, "confirm", nil)))
	if keys := redisKeys(t, f.RedisURL, f.Prefix+"-quiet"); len(keys) == 0 {
		t.Fatal("a parked call stored nothing")
	}
}

// redisKeys lists the keys of the server at url that begin with prefix.
func redisKeys(t *testing.T, url, prefix string) []string {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	keys, err := c.Keys(t.Context(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
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
	// The parked call's record is kept elsewhere: only the sealing fails.
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	p := parking(t, router.ParkOptions{Store: mem})
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })

	resp := modernCall(t, f.Router, f.VHost, "alice", p, "confirm", nil)
	if e := rpcErr(t, resp); !router.StoreUnavailable(resp) || e.Message != wire.MsgStoreUnavailable {
		t.Fatalf("got %s, want store unavailable (503)", toJSON(resp))
	}
}

// Closing a Parking waits for its calls to unwind at the backend: once
// Close returns, each parked call has ended its backend exchange, so the
// router's own Close (which waits for the DELETEs it has started) ends the
// backend's session, and no backend is left with a call nobody answers.
func TestModernPark_CloseWaitsForTheParkedCalls(t *testing.T) {
	f := parkFixture(t, router.Options{})
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	p := parking(t, router.ParkOptions{Store: mem})
	inputRequired(t, result(t, modernCall(t, f.Router, f.VHost, "alice", p, "confirm", nil)))
	b := f.Backends["legacy"]
	deletes := b.Deletes()
	p.Close()
	f.Router.Close()
	if got := b.Deletes() - deletes; got != 1 {
		t.Fatalf("%d DELETEs once the parking and the router closed, want the parked call's backend session's", got)
	}
}
