package upstream

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context travels to a backend in both places a backend may
// look: the traceparent and tracestate headers of every HTTP request of
// the exchange, and, on a 2026-07-28 connection, the same keys at the root
// of each request's params._meta (the revision's place for them). Either
// names the span the router started for the exchange (the one the
// connection was opened under), so the backend's spans hang under it. A context without a span (tracing off) sends
// nothing, and a client's own _meta keys then pass as they came.

// Keys of W3C trace context, as headers and as _meta keys.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// spanContext is the trace context a request of conn carries: the one
// the connection was opened under (a connection serves one backend
// exchange, and the router opens it inside the exchange's span), else
// ctx's.
func (conn *Conn) spanContext(ctx context.Context) trace.SpanContext {
	if conn.span.IsValid() {
		return conn.span
	}
	return trace.SpanContextFromContext(ctx)
}

// injectTraceHeaders sets sc's trace headers on h.
func injectTraceHeaders(sc trace.SpanContext, h http.Header) {
	if sc.IsValid() {
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), propagation.HeaderCarrier(h))
	}
}

// traceMeta is sc as _meta values, nil when sc is not valid.
func traceMeta(sc trace.SpanContext) map[string]json.RawMessage {
	if !sc.IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	m := make(map[string]json.RawMessage, len(c))
	for k, v := range c {
		m[k], _ = json.Marshal(v)
	}
	return m
}
