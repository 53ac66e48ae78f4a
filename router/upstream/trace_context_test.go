package upstream

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// A backend exchange carries the trace context of the span in its context
// in the traceparent header of every HTTP request, and a 2026-07-28
// request also at the root of params._meta; a client's own _meta trace
// keys are replaced (the gateway's span is the parent), never added for a
// session backend; with no span nothing changes.
func TestTraceContext_SentInHeadersAndModernMeta(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const stale = "00-11111111111111111111111111111111-2222222222222222-01"
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	modern := Handshake{ProtocolVersion: wire.ModernProtocolVersion, SkipInitialize: true}
	for _, c := range []struct {
		name       string
		m          mode
		h          Handshake
		ctx        context.Context
		clientMeta map[string]any
		wantHeader string
		wantMeta   string // _meta.traceparent the backend gets; "" none
	}{
		{"modern request: header and _meta", modeStateless, modern, traced, nil, want, want},
		{"modern request: the client's _meta replaced", modeStateless, modern, traced, map[string]any{"traceparent": stale, "tracestate": "k=v"}, want, want},
		{"session backend: header only", modeStreamable, Handshake{}, traced, nil, want, ""},
		{"session backend: the client's _meta replaced", modeStreamable, Handshake{}, traced, map[string]any{"traceparent": stale}, want, want},
		{"legacy SSE: header on every POST", modeSSE, Handshake{}, traced, nil, want, ""},
		{"no span: the client's _meta passes as it came", modeStateless, modern, context.Background(), map[string]any{"traceparent": stale}, "", stale},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, rec := serve(t, newBackend(), c.m)
			url := srv.URL
			if c.m.transport == TransportSSE {
				url += "/"
			}
			conn, err := newClient(t, url, c.m, 10*time.Second).Open(c.ctx, c.h, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(false)
			if _, err := conn.Call(c.ctx, "tools/call", callParams(t, "echo", c.clientMeta), nil); err != nil {
				t.Fatal(err)
			}
			posts := rec.posted("tools/call")
			if len(posts) != 1 {
				t.Fatalf("%d tools/call POSTs", len(posts))
			}
			for _, e := range rec.exchanges() {
				if got := e.Header.Get("Traceparent"); got != c.wantHeader {
					t.Errorf("%s request: traceparent header %q, want %q", e.Method, got, c.wantHeader)
				}
			}
			var body struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(posts[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			got, _ := body.Params.Meta["traceparent"].(string)
			if got != c.wantMeta {
				t.Errorf("_meta.traceparent %q, want %q (body %s)", got, c.wantMeta, posts[0].Body)
			}
			if c.wantMeta == want && body.Params.Meta["tracestate"] != nil {
				t.Errorf("the client's tracestate went on with the gateway's parent: %v", body.Params.Meta["tracestate"])
			}
		})
	}
}
