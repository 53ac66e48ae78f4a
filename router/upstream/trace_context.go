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
// connection was opened under), so the backend's spans hang under it. The
// client's W3C baggage, which the router put in the request's context,
// goes with it (header baggage, _meta key baggage). A context without a
// span (tracing off) sends nothing, and a client's own _meta keys then pass
// as they came.

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

// traceCarrier fills c with sc's trace context and ctx's baggage; nothing
// when sc is not valid.
func traceCarrier(ctx context.Context, sc trace.SpanContext, c propagation.TextMapCarrier) {
	if !sc.IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	propagation.Baggage{}.Inject(ctx, c)
}

// injectTraceHeaders sets sc's trace headers and ctx's baggage on h.
func injectTraceHeaders(ctx context.Context, sc trace.SpanContext, h http.Header) {
	traceCarrier(ctx, sc, propagation.HeaderCarrier(h))
}

// traceMeta is sc and ctx's baggage as _meta values, nil when sc is not
// valid.
func traceMeta(ctx context.Context, sc trace.SpanContext) map[string]json.RawMessage {
	c := propagation.MapCarrier{}
	traceCarrier(ctx, sc, c)
	if len(c) == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, len(c))
	for k, v := range c {
		m[k], _ = json.Marshal(v)
	}
	return m
}
