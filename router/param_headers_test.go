package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 tools/call translated to a 2025-era backend has its
// Mcp-Param-* headers checked by the gateway against the tool's
// x-mcp-header annotations (the backend never reads them): a header that
// disagrees with its argument, is missing, is set for an absent argument
// or holds malformed Base64 is -32020, and the backend is not called.
func TestParamHeaders_TranslatedCallCheckedAgainstTheAnnotations(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "leg"}) // stateful: 2025-era only
	addRegional(f.Backends["leg"].Server)
	call := func(args map[string]any, hdr map[string]string) *jsonrpc.Response {
		t.Helper()
		raw, _ := json.Marshal(map[string]any{"name": "regional", "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}})
		h := http.Header{}
		for k, v := range hdr {
			h.Set(k, v)
		}
		return f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "alice", Header: h,
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}})
	}
	both := map[string]any{"region": "eu-west", "opts": map[string]any{"limit": 7}, "note": "x"}
	for _, tc := range []struct {
		name string
		args map[string]any
		hdr  map[string]string
		ok   bool
	}{
		{"headers match", both, map[string]string{"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "7"}, true},
		{"Base64 sentinel decoded", both, map[string]string{"Mcp-Param-Region": "=?base64?ZXUtd2VzdA==?=", "Mcp-Param-Limit": "7"}, true},
		{"absent arguments, no headers", map[string]any{"note": "x"}, nil, true},
		{"different value", both, map[string]string{"Mcp-Param-Region": "us-east", "Mcp-Param-Limit": "7"}, false},
		{"nested integer differs", both, map[string]string{"Mcp-Param-Region": "eu-west", "Mcp-Param-Limit": "8"}, false},
		{"header missing", both, map[string]string{"Mcp-Param-Limit": "7"}, false},
		{"header for an absent argument", map[string]any{"note": "x"}, map[string]string{"Mcp-Param-Region": "eu-west"}, false},
		{"malformed Base64", both, map[string]string{"Mcp-Param-Region": "=?base64?ZXUtd2VzdA?=", "Mcp-Param-Limit": "7"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := f.Backends["leg"].Count("tools/call")
			resp := call(tc.args, tc.hdr)
			if tc.ok {
				if res := result(t, resp); res["resultType"] != "complete" {
					t.Fatalf("result %v", res)
				}
				return
			}
			if e := rpcErr(t, resp); e.Code != wire.CodeHeaderMismatch {
				t.Fatalf("error %d %q, want -32020", e.Code, e.Message)
			}
			if n := f.Backends["leg"].Count("tools/call") - calls; n != 0 {
				t.Fatalf("the backend got %d calls", n)
			}
		})
	}
}

// A 2025-era session's tools/call to a 2026-07-28 backend carries the
// Mcp-Param-* headers the tool's annotations ask for, made by the gateway
// from the arguments (the client, speaking the session protocol, sends
// none, and the backend refuses a call without them).
func TestParamHeaders_SessionCallToAModernBackendCarriesThem(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "mod", Opts: testsupport.BackendOptions{Stateless: true}})
	addRegional(f.Backends["mod"].Server)
	sid, _ := f.Initialize(nil)
	args := map[string]any{"region": "eu west ü", "opts": map[string]any{"limit": 7}}
	if res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "regional", "arguments": args})); res["isError"] == true {
		t.Fatalf("result %v", res)
	}
	h := f.Backends["mod"].LastHeaders("tools/call")
	if got := h.Get("Mcp-Param-Region"); got != wire.EncodeHeaderValue("eu west ü") {
		t.Errorf("Mcp-Param-Region = %q", got)
	}
	if got := h.Get("Mcp-Param-Limit"); got != "7" {
		t.Errorf("Mcp-Param-Limit = %q", got)
	}
}

// addRegional adds tool "regional", two of whose arguments are mirrored
// in headers (one nested), and which answers "done".
func addRegional(srv *mcp.Server) {
	srv.AddTool(&mcp.Tool{Name: "regional", InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
			"opts": map[string]any{"type": "object", "properties": map[string]any{
				"limit": map[string]any{"type": "integer", "x-mcp-header": "Limit"},
			}},
			"note": map[string]any{"type": "string"},
		},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
}

// rewriteRegion is a pre-hook that changes the region argument.
type rewriteRegion struct{}

func (rewriteRegion) Pre(_ context.Context, c *hook.Call) error {
	var p map[string]any
	_ = json.Unmarshal(c.Params, &p)
	p["arguments"].(map[string]any)["region"] = "rewritten"
	c.Params, _ = json.Marshal(p)
	return nil
}

func (rewriteRegion) Post(_ context.Context, _ *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	return result, nil
}

// A 2026-07-28 client's headers stated the arguments it sent; a pre-hook
// that rewrites an argument mirrored in a header gets the header made
// anew, so the backend does not refuse the call as a mismatch.
func TestParamHeaders_RemadeWhenAHookRewritesTheArguments(t *testing.T) {
	f := newFixtureOpts(t, router.Options{Hooks: []hook.Hook{rewriteRegion{}}},
		backendSpec{Key: "mod", Opts: testsupport.BackendOptions{Stateless: true}})
	addRegional(f.Backends["mod"].Server)
	raw, _ := json.Marshal(map[string]any{"name": "regional", "arguments": map[string]any{"region": "eu-west"}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}})
	h := http.Header{"Mcp-Param-Region": {"eu-west"}}
	resp := f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "alice", Header: h,
		Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}})
	if res := result(t, resp); res["isError"] == true {
		t.Fatalf("result %v", res)
	}
	if got := f.Backends["mod"].LastHeaders("tools/call").Get("Mcp-Param-Region"); got != "rewritten" {
		t.Fatalf("Mcp-Param-Region = %q, want the rewritten argument's", got)
	}
}
