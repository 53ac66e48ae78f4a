package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The client's trace: what a traced client would send as traceparent.
const (
	clientTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID      = "00f067aa0ba902b7"
	clientTraceparent = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// newTracedFixture is a fixture whose router records its spans.
func newTracedFixture(t *testing.T, specs ...backendSpec) (*fixture, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newFixtureOpts(t, router.Options{TracerProvider: tp}, specs...), rec
}

// spansNamed returns the ended spans with the given name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := spansNamed(rec, name)
	if len(s) != 1 {
		var all []string
		for _, e := range rec.Ended() {
			all = append(all, e.Name())
		}
		t.Fatalf("%d spans named %q, want 1 (spans: %q)", len(s), name, all)
	}
	return s[0]
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// A routed call is one span in the client's trace (its parent the
// client's span, from the traceparent header) with one child for the
// backend exchange; the backend gets the child's context.
func TestTracing_RoutedCallIsOneTraceWithABackendChild(t *testing.T) {
	f, rec := newTracedFixture(t, backendSpec{Key: "one"}, backendSpec{Key: "two"})
	sid, _ := f.Initialize(nil)
	rec.Reset()
	hdr := http.Header{"Traceparent": {clientTraceparent}, "Baggage": {"tenant=acme"}}
	result(t, f.CallHdr(sid, hdr, "tools/call", map[string]any{"name": "two-echo", "arguments": map[string]any{"text": "x"}}))

	req := one(t, rec, "mcp tools/call")
	if got := req.SpanContext().TraceID().String(); got != clientTraceID {
		t.Errorf("trace id %s, want the client's %s", got, clientTraceID)
	}
	if got := req.Parent().SpanID().String(); got != clientSpanID || !req.Parent().IsRemote() {
		t.Errorf("parent %s (remote %v), want the client's span %s", got, req.Parent().IsRemote(), clientSpanID)
	}
	if req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span kind %v", req.SpanKind())
	}
	for key, want := range map[string]string{"mcpgw.vhost": f.VHost, "mcp.method.name": "tools/call",
		"mcpgw.published_name": "two-echo", "mcpgw.backend": "two", "mcpgw.outcome": "ok"} {
		if got := attr(req, key).AsString(); got != want {
			t.Errorf("request span %s = %q, want %q", key, got, want)
		}
	}
	child := one(t, rec, "backend two tools/call")
	if child.Parent().SpanID() != req.SpanContext().SpanID() || child.SpanContext().TraceID() != req.SpanContext().TraceID() {
		t.Errorf("backend span's parent %s, want the request span %s", child.Parent().SpanID(), req.SpanContext().SpanID())
	}
	if got := attr(child, "mcpgw.outcome").AsString(); got != router.OutcomeOK {
		t.Errorf("backend span outcome %q", got)
	}
	sent := f.Backends["two"].LastHeaders("tools/call").Get("Traceparent")
	if want := "00-" + clientTraceID + "-" + child.SpanContext().SpanID().String() + "-01"; sent != want {
		t.Errorf("backend got traceparent %q, want the backend span's %q", sent, want)
	}
	if got := f.Backends["two"].LastHeaders("tools/call").Get("Baggage"); got != "tenant=acme" {
		t.Errorf("backend got baggage %q, want the client's", got)
	}
	if n := len(spansNamed(rec, "backend one tools/call")); n != 0 {
		t.Errorf("the other backend has %d spans", n)
	}
}

// A failed backend shows on both spans: the exchange's outcome and status,
// and the request's JSON-RPC error code.
func TestTracing_BackendFailureMarksBothSpans(t *testing.T) {
	f, rec := newTracedFixture(t, backendSpec{Key: "one"}, backendSpec{Key: "two"})
	sid, _ := f.Initialize(nil)
	f.Backends["two"].Close()
	rec.Reset()
	rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "two-echo", "arguments": map[string]any{"text": "x"}}))

	req := one(t, rec, "mcp tools/call")
	if got := attr(req, "rpc.jsonrpc.error_code").AsInt64(); got != router.CodeInternalError {
		t.Errorf("request error code %d", got)
	}
	if req.Status().Code != codes.Error || attr(req, "mcpgw.outcome").AsString() != "error" {
		t.Errorf("request status %v outcome %q", req.Status(), attr(req, "mcpgw.outcome").AsString())
	}
	child := one(t, rec, "backend two tools/call")
	if got := attr(child, "mcpgw.outcome").AsString(); got != router.OutcomeTransportError {
		t.Errorf("backend outcome %q", got)
	}
	if child.Status().Code != codes.Error || !bytes.Contains([]byte(child.Status().Description), []byte(`backend "two"`)) {
		t.Errorf("backend status %+v", child.Status())
	}
	if req.SpanContext().TraceID() == (trace.TraceID{}) || child.Parent().SpanID() != req.SpanContext().SpanID() {
		t.Error("no trace without a client trace context")
	}
}

// A 2026-07-28 request's trace context comes from params._meta, which wins
// over the header; the backend gets the exchange's context in _meta too.
func TestTracing_ModernRequestTakesTraceContextFromMeta(t *testing.T) {
	f, rec := newTracedFixture(t, backendSpec{Key: "m", Opts: testsupport.BackendOptions{Stateless: true, ModernTools: true}})
	params := map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"traceparent": clientTraceparent,
		"baggage":     "tenant=acme",
	}}
	raw, _ := json.Marshal(params)
	hdr := http.Header{"Traceparent": {"00-11111111111111111111111111111111-2222222222222222-01"}}
	resp := f.Router.Handle(context.Background(), &router.Call{VHost: f.VHost, Principal: "alice", Header: hdr,
		Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/call", Params: raw}, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}})
	result(t, resp)

	req := one(t, rec, "mcp tools/call")
	if got := req.SpanContext().TraceID().String(); got != clientTraceID {
		t.Errorf("trace id %s, want _meta's %s (not the header's)", got, clientTraceID)
	}
	if got := attr(req, "mcp.protocol.version").AsString(); got != wire.ModernProtocolVersion {
		t.Errorf("protocol %q", got)
	}
	disc := one(t, rec, "backend m discover")
	call := one(t, rec, "backend m tools/call")
	for _, s := range []sdktrace.ReadOnlySpan{disc, call} {
		if s.Parent().SpanID() != req.SpanContext().SpanID() {
			t.Errorf("%s: parent %s, want the request span", s.Name(), s.Parent().SpanID())
		}
	}
	if got := f.Backends["m"].LastHeaders("tools/call").Get("Traceparent"); got != "00-"+clientTraceID+"-"+call.SpanContext().SpanID().String()+"-01" {
		t.Errorf("backend traceparent header %q", got)
	}
	if got := f.Backends["m"].LastHeaders("tools/call").Get("Baggage"); got != "tenant=acme" {
		t.Errorf("backend baggage header %q, want _meta's", got)
	}
}

// A list fans out: one child per backend, running side by side. The
// backends hold every tools/list until both have one, so the children can
// only overlap if the gateway asked both at once.
func TestTracing_FanOutChildrenRunInParallel(t *testing.T) {
	arrived := make(chan struct{}, 2)
	both := make(chan struct{})
	var once sync.Once
	barrier := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
				arrived <- struct{}{}
				if len(arrived) == 2 {
					once.Do(func() { close(both) })
				}
				select {
				case <-both:
				case <-time.After(5 * time.Second): // sequential: fail below, do not hang
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	vh := &router.VirtualHost{Name: "vh", Backends: map[string]*router.Backend{}}
	for _, key := range []string{"a", "b"} {
		srv := mcp.NewServer(&mcp.Implementation{Name: key, Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		hs := httptest.NewServer(barrier(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true})))
		t.Cleanup(hs.Close)
		vh.Backends[key] = &router.Backend{Config: upstream.Config{Key: key, URL: hs.URL, Timeout: 10 * time.Second}, Session: router.SessionPerRequest}
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	base := newFixture(t)
	in := routertest.StartInstance(t, nil, map[string]*router.VirtualHost{"vh": vh},
		routertest.Options{Router: router.Options{TracerProvider: tp}}, base.NewStore)
	sess, resp := in.Router.Initialize(context.Background(), "vh", "alice", http.Header{}, &jsonrpc.Request{ID: mustID(1), Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)})
	if resp.Error != nil {
		t.Fatal(resp.Error)
	}
	rec.Reset()
	result(t, in.Router.Handle(context.Background(), &router.Call{Caller: &router.SessionCaller{Session: sess}, Header: http.Header{"Traceparent": {clientTraceparent}},
		Request: &jsonrpc.Request{ID: mustID(2), Method: "tools/list"}}))

	req := one(t, rec, "mcp tools/list")
	a, b := one(t, rec, "backend a tools/list"), one(t, rec, "backend b tools/list")
	for _, s := range []sdktrace.ReadOnlySpan{a, b} {
		if s.Parent().SpanID() != req.SpanContext().SpanID() || s.SpanContext().TraceID().String() != clientTraceID {
			t.Errorf("%s is not a child of the request span in the client's trace", s.Name())
		}
	}
	if !a.StartTime().Before(b.EndTime()) || !b.StartTime().Before(a.EndTime()) {
		t.Errorf("children did not overlap: a %v-%v, b %v-%v", a.StartTime(), a.EndTime(), b.StartTime(), b.EndTime())
	}
	if len(rec.Ended()) != 3 {
		t.Errorf("%d spans, want the request and two children", len(rec.Ended()))
	}
}

// With no tracer provider the router starts nothing and a backend gets no
// trace context it did not get before.
func TestTracing_OffSendsNoTraceContext(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one"}, backendSpec{Key: "two"})
	sid, _ := f.Initialize(nil)
	result(t, f.CallHdr(sid, http.Header{"Traceparent": {clientTraceparent}}, "tools/call",
		map[string]any{"name": "one-echo", "arguments": map[string]any{"text": "x"}}))
	if got := f.Backends["one"].LastHeaders("tools/call").Get("Traceparent"); got != "" {
		t.Errorf("tracing off, yet the backend got traceparent %q", got)
	}
}
