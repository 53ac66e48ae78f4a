package router_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
)

// searchFixture is two demo backends (gateway-one with 200 realistic
// extra tools) on a tool_search vhost, with rules, and a second instance.
func searchFixture(t *testing.T, always []string, rules []policy.AccessRule) (*fixture, *routertest.Instance) {
	t.Helper()
	f := newFixture(t, backendSpec{Key: "gateway-one", Opts: testsupport.BackendOptions{RealisticTools: 200}}, backendSpec{Key: "gateway-two"})
	names, err := policy.CompileNames(always)
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ToolSearch = &router.ToolSearch{Always: names, Results: 5}
	if rules != nil {
		f.Config.Access = compileRules(t, rules)
	}
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	return f, f.NewInstance(routertest.Options{})
}

// searched is the names a search answered, and checks the answer's
// shape: structuredContent.tools, and the same as JSON text.
func searched(t *testing.T, res map[string]any) []string {
	t.Helper()
	sc, ok := res["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent: %v", res)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil || toJSON(fromText) != toJSON(sc) {
		t.Fatalf("text %q is not structuredContent %v", text(t, res), sc)
	}
	var out []string
	for _, it := range sc["tools"].([]any) {
		tool := it.(map[string]any)
		if _, ok := tool["inputSchema"]; !ok {
			t.Errorf("tool %v has no inputSchema", tool)
		}
		out = append(out, tool["name"].(string))
	}
	return out
}

func TestToolSearch_ListSearchAndCallAcrossInstances(t *testing.T) {
	f, in2 := searchFixture(t, []string{"gateway-two-*"}, nil)
	sid, _ := f.Initialize(nil)

	got := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	want := []string{"call_tool", "search_tools", "gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools/list = %v, want %v", got, want)
	}

	found := searched(t, result(t, in2.Call(t, sid, mustID(2), nil, "tools/call",
		map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "reopen a ticket"}}, nil)))
	if len(found) != 5 || found[0] != "gateway-one-reopen_tickets" {
		t.Fatalf("search found %v: want gateway-one-reopen_tickets first, 5 results", found)
	}
	found = searched(t, result(t, f.Call(sid, "tools/call",
		map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "add to the counter", "limit": 2}})))
	if len(found) != 2 || !strings.HasSuffix(found[0], "-increment") {
		t.Fatalf("search found %v: want an increment first, 2 results", found)
	}

	// call_tool and the direct call both reach the backend, on either instance.
	f.Backends["gateway-one"].ResetCounts()
	res := result(t, in2.Call(t, sid, mustID(3), nil, "tools/call",
		map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "via call_tool"}}}, nil))
	if text(t, res) != "via call_tool" {
		t.Fatalf("call_tool answered %v", res)
	}
	res = result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "direct"}}))
	if text(t, res) != "direct" {
		t.Fatalf("direct call answered %v", res)
	}
	if n := f.Backends["gateway-one"].Count("tools/call"); n != 2 {
		t.Fatalf("gateway-one saw %d calls, want 2", n)
	}
}

func TestToolSearch_HiddenToolIsNeverFoundNorCalled(t *testing.T) {
	f, in2 := searchFixture(t, nil, []policy.AccessRule{{Allow: []string{"*"}, Deny: []string{"gateway-one-*_tickets", "gateway-two-echo"}}})
	sid, _ := f.Initialize(nil)
	for _, q := range []string{"reopen a ticket", "tickets", "return the given text unchanged", "echo"} {
		for _, in := range []*routertest.Instance{f.Instance, in2} {
			found := searched(t, result(t, in.Call(t, sid, mustID(2), nil, "tools/call",
				map[string]any{"name": "search_tools", "arguments": map[string]any{"query": q, "limit": 50}}, nil)))
			for _, name := range found {
				if strings.HasSuffix(name, "_tickets") || name == "gateway-two-echo" {
					t.Fatalf("query %q found hidden %s", q, name)
				}
			}
		}
	}
	// call_tool of a hidden tool is answered as an unknown one, word for word.
	viaCallTool := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "gateway-two-echo"}}))
	unknown := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "nobody-echo"}}))
	direct := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-two-echo"}))
	if viaCallTool.Code != direct.Code || viaCallTool.Message != direct.Message ||
		strings.ReplaceAll(unknown.Message, "nobody-echo", "gateway-two-echo") != viaCallTool.Message {
		t.Fatalf("hidden via call_tool %v, unknown via call_tool %v, direct %v", viaCallTool, unknown, direct)
	}
}

func TestToolSearch_AlwaysGlobsAndMalformedCalls(t *testing.T) {
	f, _ := searchFixture(t, []string{"gateway-one-get_*", "gateway-two-echo"}, nil)
	sid, _ := f.Initialize(nil)
	got := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	if len(got) != 2+11+1 || got[2] != "gateway-one-get_alerts" || !slices.Contains(got, "gateway-two-echo") || slices.Contains(got, "gateway-two-increment") {
		t.Fatalf("tools/list = %v", got)
	}
	for _, tc := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "call_tool needs arguments.name"},
		{map[string]any{"name": 5}, "call_tool needs arguments.name"},
		{map[string]any{"name": "call_tool"}, "call_tool cannot call call_tool"},
		{map[string]any{"name": "gateway-one-echo", "arguments": "x"}, "must be an object"},
		{"nope", "call_tool's arguments must be an object"},
	} {
		e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "call_tool", "arguments": tc.args}))
		if e.Code != -32602 || !strings.Contains(e.Message, tc.want) {
			t.Errorf("call_tool %v: %v, want -32602 %q", tc.args, e, tc.want)
		}
	}
	for _, args := range []any{map[string]any{}, map[string]any{"query": "x", "limit": 51}, map[string]any{"query": strings.Repeat("q", 2000)}} {
		res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "search_tools", "arguments": args}))
		if res["isError"] != true {
			t.Errorf("search_tools %v: %v, want isError", args, res)
		}
	}
	// search_tools through call_tool is a search.
	found := searched(t, result(t, f.Call(sid, "tools/call", map[string]any{"name": "call_tool",
		"arguments": map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "archive invoices"}}})))
	if len(found) == 0 || found[0] != "gateway-one-archive_invoices" {
		t.Fatalf("search through call_tool found %v", found)
	}
}
