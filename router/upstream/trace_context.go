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
// names the span the router started for the exchange, so the backend's
// spans hang under it. A context without a span (tracing off) sends
// nothing, and a client's own _meta keys then pass as they came.

// Keys of W3C trace context, as headers and as _meta keys.
const (
	metaTraceparent = "traceparent"
	metaTracestate  = "tracestate"
)

// injectTraceHeaders sets the trace headers of ctx's span on h.
func injectTraceHeaders(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// traceMeta is ctx's trace context as _meta values, nil without a span.
func traceMeta(ctx context.Context) map[string]json.RawMessage {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	m := make(map[string]json.RawMessage, len(c))
	for k, v := range c {
		m[k], _ = json.Marshal(v)
	}
	return m
}
