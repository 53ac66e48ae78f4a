package handler

import (
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// BenchmarkDecodeEncode measures the JSON-RPC work the handler does per
// request: decode the client's message, encode the answer (whose result
// passes through as raw bytes).
func BenchmarkDecodeEncode(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"hello"}}}`)
	result := []byte(`{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}`)
	b.ReportAllocs()
	for b.Loop() {
		msg, rawID, derr := decodeMessage(body)
		if derr != nil {
			b.Fatal(derr.msg)
		}
		req := msg.(*jsonrpc.Request)
		if _, err := wire.EncodeResponseAs(&jsonrpc.Response{ID: req.ID, Result: result}, rawID); err != nil {
			b.Fatal(err)
		}
	}
}
