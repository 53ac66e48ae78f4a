package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// cannedTransport answers every request with the same body, so a benchmark
// measures the client alone (no server, no sockets).
type cannedTransport struct {
	contentType, body string
}

func (c cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {c.contentType}},
		Body:       io.NopCloser(strings.NewReader(c.body)),
		Request:    req,
	}, nil
}

// The client's own cost per tools/call, without the network:
//
//	go test -run - -bench ClientCall -benchmem ./cmd/mcpbench
func BenchmarkClientCall(b *testing.B) {
	const result = `{"content":[{"type":"text","text":"hi"}]}`
	for _, c := range []struct{ name, ct, body, proto string }{
		{"json", "application/json", `{"jsonrpc":"2.0","id":%d,"result":` + result + `}`, DefaultProto},
		{"sse", "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":" + result + "}\n\n", DefaultProto},
		// 2026-07-28: _meta spliced into params, Mcp-Method and Mcp-Name.
		{"modern-json", "application/json", `{"jsonrpc":"2.0","id":%d,"result":` + result + `}`, ModernProto},
	} {
		b.Run(c.name, func(b *testing.B) {
			// The id in the canned answer must match: the client's ids
			// start at 1, so answer with id 1 and reset the counter.
			body := strings.Replace(c.body, "%d", "1", 1)
			cl := NewClient(&ClientConfig{URL: "http://bench.invalid/mcp", HTTP: &http.Client{Transport: cannedTransport{c.ct, body}}, Proto: c.proto})
			if !cl.Modern() {
				cl.sessionID, cl.proto = "sid", DefaultProto
			}
			params := json.RawMessage(`{"name":"echo","arguments":{"text":"hi"}}`)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				cl.nextID = 0
				if _, err := cl.Call(ctx, "tools/call", params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
