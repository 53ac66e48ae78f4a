package router_test

import (
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
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
