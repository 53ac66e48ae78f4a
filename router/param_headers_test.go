package router_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
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
	f.Backends["leg"].Server.AddTool(&mcp.Tool{Name: "regional", InputSchema: map[string]any{
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
		return f.Router.HandleModern(context.Background(), &router.ModernCall{VHost: f.VHost, Principal: "alice", Header: h,
			Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: raw}, ClientCapabilities: json.RawMessage(`{}`)})
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
