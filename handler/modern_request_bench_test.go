package handler

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// modernBenchRequests are a 2026-07-28 tools/call and a second tools/list
// page, whose params carry a cursor of the size an 8-backend vhost signs
// (about 1 KB).
var modernBenchRequests = []struct{ name, method, mcpName, params string }{
	{"tools-call", "tools/call", "echo", `{"name":"echo","arguments":{"text":"hi"},"_meta":{` + modernBenchMeta + `}}`},
	{"tools-list-page-2", "tools/list", "", `{"_meta":{` + modernBenchMeta + `},"cursor":"` + strings.Repeat("eyJvIjoidG9vbHMvbGlzdCJ9", 42) + `"}`},
}

const modernBenchMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcpbench","version":"1"}`

// BenchmarkModernRequestChecks measures what the handler does to a modern
// request between decoding it and handing it to the router: tell the
// generation, check _meta and the mirrored headers, decide JSON or stream.
//
//	go test -run - -bench ModernRequestChecks -benchmem ./handler
func BenchmarkModernRequestChecks(b *testing.B) {
	for _, c := range modernBenchRequests {
		b.Run(c.name, func(b *testing.B) {
			msg, _, derr := decodeMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"` + c.method + `","params":` + c.params + `}`))
			if derr != nil {
				b.Fatal(derr.msg)
			}
			req := msg.(*jsonrpc.Request)
			h := http.Header{}
			h.Set(headerProtocolVersion, "2026-07-28")
			h.Set(headerMethod, c.method)
			if c.mcpName != "" {
				h.Set(headerName, c.mcpName)
			}
			b.ReportAllocs()
			for b.Loop() {
				meta, ok := paramsMeta(req.Params)
				if !isModern(meta, ok, h.Values(headerProtocolVersion)) {
					b.Fatal("not modern")
				}
				if herr := checkModern(req, h, meta, ok); herr != nil {
					b.Fatal(herr.err)
				}
				if meta.hasProgressToken() {
					b.Fatal("progress token")
				}
			}
		})
	}
}
