package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/plugins"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/internal/routertest"
)

func limitsOf(t testing.TB, limits ...policy.RateLimit) *policy.RateLimitPolicy {
	t.Helper()
	p, err := policy.CompileRateLimits(limits)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// toolsCall is a session's tools/call of name, as the handler builds it.
func toolsCall(t *testing.T, f *fixture, sid store.SessionID, name string) *router.Call {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}})
	return &router.Call{Caller: &router.SessionCaller{Session: f.Instance.Load(t, sid)}, Header: http.Header{},
		Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: raw}}
}

func TestRateLimits_AdmitThenHandleCountsACallOnce(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	f.Config.RateLimits = limitsOf(t, policy.RateLimit{Per: policy.RatePerPrincipal, Tools: []string{"a-*"}, Limit: 2, Window: time.Hour})
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	sid, _ := f.Initialize(nil)
	ctx := context.Background()

	for i := range 2 {
		c := toolsCall(t, f, sid, "a-echo")
		d, refusal := f.Router.Admit(ctx, c)
		if refusal != nil {
			t.Fatalf("call %d refused: %v", i, refusal.Error)
		}
		if resp := f.Router.Serve(ctx, c, d); resp.Error != nil { // counted once, by Admit
			t.Fatalf("call %d: %v", i, resp.Error)
		}
	}
	_, resp := f.Router.Admit(ctx, toolsCall(t, f, sid, "a-echo"))
	wait, limited := router.RateLimited(resp)
	if resp == nil || !limited || wait < 29*time.Minute || rpcErr(t, resp).Code != -32029 {
		t.Fatalf("third call: %+v (limited %v, retry after %v)", resp, limited, wait)
	}
	// Handle alone (a batch's call) counts too, and marks its answer.
	if resp := f.Call(sid, "tools/call", map[string]any{"name": "a-echo"}); resp.Error == nil {
		t.Fatal("Handle ran a call over the limit")
	} else if _, limited := router.RateLimited(resp); !limited {
		t.Fatalf("Handle's refusal is not marked: %v", resp.Error)
	}
	if n := f.Backends["a"].Count("tools/call"); n != 2 {
		t.Fatalf("backend saw %d calls, want 2", n)
	}
	// b's tools are not limited; a name no backend owns is refused as
	// unknown, not as limited.
	for range 3 {
		if resp := f.Call(sid, "tools/call", map[string]any{"name": "b-echo", "arguments": map[string]any{"text": "x"}}); resp.Error != nil {
			t.Fatalf("b-echo: %v", resp.Error)
		}
		if e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "zz-echo"})); e.Code != -32602 {
			t.Fatalf("unknown tool: %v", e)
		}
	}
}

// Names no backend owns are not counted: they cannot use up a limit.
func TestRateLimits_UnknownNamesAreNotCounted(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	f.Config.RateLimits = limitsOf(t, policy.RateLimit{Per: policy.RatePerVHost, Limit: 1, Window: time.Hour})
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	sid, _ := f.Initialize(nil)
	for range 5 {
		if e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "zz-echo"})); e.Code != -32602 {
			t.Fatalf("unknown tool: %v", e)
		}
	}
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "a-echo", "arguments": map[string]any{"text": "x"}}))
	if e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "b-echo", "arguments": map[string]any{"text": "x"}})); e.Code != -32029 {
		t.Fatalf("second call on a vhost limit of 1: %v", e)
	}
}

func TestHooks_VHostPluginsRunAfterRouterWideHooks(t *testing.T) {
	var log []string
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{&recordingHook{name: "global", log: &log}}}, backendSpec{Key: "a"})
	f.Config.Hooks = []hook.Hook{&recordingHook{name: "vhost", log: &log}}
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	sid, _ := f.Initialize(nil)
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}))
	want := []string{"global:pre:tools/call:a:echo", "vhost:pre:tools/call:a:echo", "global:post", "vhost:post"}
	if len(log) != len(want) {
		t.Fatalf("log %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("log %v, want %v", log, want)
		}
	}
}

// validateArgumentsFixture is a vhost of backend "a" with the
// validate_arguments plugin.
func validateArgumentsFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, backendSpec{Key: "a"})
	hooks, err := plugins.Compile([]plugins.Spec{{Type: plugins.TypeValidateArguments}})
	if err != nil {
		t.Fatal(err)
	}
	f.Config.Hooks = hooks
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	return f
}

// validate_arguments reads the tool's schema from the backend's tools/list
// once for many calls, and refuses bad arguments before the backend.
func TestValidateArguments_SchemaFetchedOnceBadArgumentsNeverReachTheBackend(t *testing.T) {
	f := validateArgumentsFixture(t)
	sid, _ := f.Initialize(nil)
	be := f.Backends["a"]
	be.ResetCounts()
	for range 3 {
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "increment", "arguments": map[string]any{"by": 2}}))
		if e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "increment", "arguments": map[string]any{"by": "two"}})); e.Code != -32602 {
			t.Fatalf("bad argument: %v", e)
		}
	}
	if e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "nosuch"})); e.Code != -32030 {
		t.Fatalf("a tool the backend does not list: %v", e)
	}
	if calls, lists := be.Count("tools/call"), be.Count("tools/list"); calls != 3 || lists != 1 {
		t.Fatalf("backend saw %d tools/call (want 3) and %d tools/list (want 1: cached)", calls, lists)
	}
}

// A check that cannot be made does not pass: when the backend's tools/list
// fails, the call is refused -32603 naming the backend, and the backend's
// tools/call is never sent; the failure is not cached.
func TestValidateArguments_AFailingToolListRefusesTheCall(t *testing.T) {
	f := validateArgumentsFixture(t)
	sid, _ := f.Initialize(nil)
	be := f.Backends["a"]
	be.ResetCounts()
	be.FailMethod("tools/list", 1)
	e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}))
	if e.Code != -32603 || !strings.Contains(e.Message, `backend "a"`) || !strings.Contains(e.Message, "validate_arguments") {
		t.Fatalf("tools/list failing: %v", e)
	}
	if n := be.Count("tools/call"); n != 0 {
		t.Fatalf("the backend saw %d tools/call", n)
	}
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}))
}

// A batched limit is counted locally: an instance takes Batch requests
// from the shared counter at once and hands them out without the store.
// Every request handed out was taken from the counter, so two instances
// together never admit more than the limit; what one took ahead is its
// own even when the other is refused, and near the limit a batch that no
// longer fits falls back to single requests.
func TestRateLimits_BatchedLimitCountsLocallyNeverPastTheLimit(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"})
	f.Config.RateLimits = limitsOf(t, policy.RateLimit{Per: policy.RatePerPrincipal, Limit: 10, Window: time.Hour, Batch: 4})
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	b := f.NewInstance(routertest.Options{})
	b.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	sid, _ := f.Initialize(nil)
	args := map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}} // one backend: names pass through
	onA := func() *jsonrpc.Response { return f.Call(sid, "tools/call", args) }
	onB := func() *jsonrpc.Response { return b.Call(t, sid, mustID(7), http.Header{}, "tools/call", args, nil) }

	result(t, onA())   // A takes 4: 6 left in the store, 3 in A's hands
	for i := range 6 { // B takes 4 (2 left), hands out 3, then 2 single ones
		if resp := onB(); resp.Error != nil {
			t.Fatalf("B's call %d of the 6 left: %v", i+1, resp.Error)
		}
	}
	if e := rpcErr(t, onB()); e.Code != -32029 {
		t.Fatalf("B past the limit: %v, want -32029", e)
	}
	for i := range 3 { // A's requests taken ahead are still A's
		if resp := onA(); resp.Error != nil {
			t.Fatalf("A's call %d taken ahead: %v", i+1, resp.Error)
		}
	}
	if e := rpcErr(t, onA()); e.Code != -32029 {
		t.Fatalf("A past the limit: %v, want -32029", e)
	}
	if n := f.Backends["a"].Count("tools/call"); n != 10 {
		t.Fatalf("backend saw %d calls, want the limit, 10", n)
	}
}

// A request is served on the routing table Admit decided it on: a reload
// between the two changes the next request, not this one.
func TestAdmit_ServeKeepsTheDecisionsOfItsTable(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	sid, _ := f.Initialize(nil)
	ctx := context.Background()

	c := toolsCall(t, f, sid, "a-echo")
	d, refusal := f.Router.Admit(ctx, c)
	if refusal != nil || d == nil {
		t.Fatalf("Admit: %+v, %v", refusal, d)
	}
	without := *f.Config
	without.Backends = map[string]*router.Backend{"b": f.Config.Backends["b"]}
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &without})

	if resp := f.Router.Serve(ctx, c, d); resp.Error != nil {
		t.Fatalf("the admitted call, served after the reload: %v", resp.Error)
	}
	resp := f.Router.Handle(ctx, toolsCall(t, f, sid, "a-echo"))
	if e := rpcErr(t, resp); e.Code != -32602 || !strings.Contains(e.Message, "unknown tool") {
		t.Fatalf("a call after the reload: %+v", resp)
	}
}

// A 2026-07-28 call admitted by the transport is counted once, whichever
// path (parking, the core) Serve then takes.
func TestAdmit_ModernCallCountedOnce(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "a"}, backendSpec{Key: "b"})
	f.Config.RateLimits = limitsOf(t, policy.RateLimit{Per: policy.RatePerPrincipal, Tools: []string{"a-*"}, Limit: 2, Window: time.Hour})
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	ctx := context.Background()
	for i := range 2 {
		c := &router.Call{VHost: f.VHost, Principal: "p", Header: http.Header{}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)},
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: json.RawMessage(`{"name":"a-echo","arguments":{"text":"x"}}`)}}
		d, refusal := f.Router.Admit(ctx, c)
		if refusal != nil {
			t.Fatalf("call %d refused: %v", i, refusal.Error)
		}
		if resp := f.Router.Serve(ctx, c, d); resp.Error != nil {
			t.Fatalf("call %d: %v", i, resp.Error)
		}
	}
}
