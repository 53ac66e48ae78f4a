package router_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
)

// An MCP App calls its server's tools by their raw names: a name that
// routes nowhere is taken as a backend's own tool name when exactly one
// backend lists it; when several do, the error names the candidates; a
// name no backend lists stays unknown.
func TestRawToolNames_ResolveWhenOneBackendHasTheTool(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "app", Opts: testsupport.BackendOptions{StreamingTools: true}}, backendSpec{Key: "plain"})
	sid, _ := f.Initialize(nil)

	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "progress", "arguments": map[string]any{"steps": 1}}))
	if res["isError"] == true {
		t.Fatalf("the raw name of app's tool: %v", res)
	}
	if got := f.Backends["app"].Count("tools/call"); got != 1 {
		t.Fatalf("app got %d tools/call, want the raw-named call", got)
	}

	e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}))
	if e.Code != -32602 || !strings.Contains(e.Message, `"app-echo"`) || !strings.Contains(e.Message, `"plain-echo"`) {
		t.Fatalf("a raw name both backends list: %+v, want -32602 naming app-echo and plain-echo", e)
	}
	e = rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "no_such_tool"}))
	if e.Code != -32602 || !strings.Contains(e.Message, "unknown tool") {
		t.Fatalf("a name no backend lists: %+v, want unknown tool", e)
	}
	// A published name is what it always was.
	if got := text(t, result(t, f.Call(sid, "tools/call", map[string]any{"name": "plain-echo", "arguments": map[string]any{"text": "hi"}}))); got != "hi" {
		t.Fatalf("plain-echo: %q", got)
	}
}

// A raw-named call is decided once, in serve, as its published name's:
// counted against that name's rate limit once per call, and the decisions
// Admit made (an unknown name) are left as they were.
func TestRawToolNames_CountedOnceDecisionsUnchanged(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "app", Opts: testsupport.BackendOptions{StreamingTools: true}}, backendSpec{Key: "plain"})
	f.Config.RateLimits = limitsOf(t, policy.RateLimit{Per: policy.RatePerPrincipal, Tools: []string{"app-*"}, Limit: 2, Window: time.Hour})
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	sid, _ := f.Initialize(nil)
	ctx := context.Background()
	call := func() *router.Call { return toolsCall(t, f, sid, "progress") } // admission_test.go
	for i := range 2 {
		c := call()
		d, refusal := f.Router.Admit(ctx, c)
		if refusal != nil || d == nil {
			t.Fatalf("call %d: Admit %v, %v", i, refusal, d)
		}
		before := *d
		if resp := f.Router.Serve(ctx, c, d); resp.Error != nil {
			t.Fatalf("call %d: %v", i, resp.Error)
		}
		if !reflect.DeepEqual(before, *d) {
			t.Fatalf("call %d: Serve changed the decisions Admit made", i)
		}
	}
	if e := rpcErr(t, f.Router.Handle(ctx, call())); e.Code != -32029 {
		t.Fatalf("the third raw-named call: %+v, want -32029", e)
	}
	if got := f.Backends["app"].Count("tools/call"); got != 2 {
		t.Fatalf("app got %d tools/call, want 2", got)
	}
}
