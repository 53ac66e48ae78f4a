package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/router/hook"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/store"
)

// What the router tells those who watch it: traces, the timing of
// backend exchanges (Observer, for metrics) and the audit trail's note of
// each request (AuditNote, below).

// Tracing (Options.TracerProvider): one span per MCP request, named
// "mcp <method>", and under it one per backend exchange, named
// "backend <key> <method>" (a fan-out's run side by side, as they ran),
// plus the discovery or initialize probes a request waits for. The
// request span continues the client's trace: the W3C trace context at the
// root of params._meta (protocol 2026-07-28 puts it there; a 2025-era
// client may too) wins over the traceparent header, since it belongs to
// this one message and a batch's messages may each carry their own. The
// backend spans' context goes on to the backend (router/upstream). With no
// provider the router starts nothing and adds no attribute: every helper
// here checks r.tracer first.

// tracerName is the instrumentation scope of the router's spans.
const tracerName = "github.com/mcpgw/gateway/router"

// Span attributes. The set is small and documented (docs/guide/tracing.md):
// what an operator filters traces by.
const (
	attrVHost     attribute.Key = "mcpgw.vhost"
	attrMethod    attribute.Key = "mcp.method.name"
	attrName      attribute.Key = "mcpgw.published_name"
	attrBackend   attribute.Key = "mcpgw.backend"
	attrOutcome   attribute.Key = "mcpgw.outcome"
	attrErrorCode attribute.Key = "rpc.jsonrpc.error_code"
	attrProtocol  attribute.Key = "mcp.protocol.version"
	attrCached    attribute.Key = "mcpgw.list_cache_hits"
)

// Outcomes of a request span (a backend span uses the Observer's).
const (
	requestOK        = "ok"
	requestError     = "error"
	requestCancelled = "cancelled"
)

// startRequest opens the span of one downstream request, in the client's
// trace when it sent one. It returns a nil span when tracing is off.
func (b *base) startRequest(ctx context.Context, vhostName, protocol string, hdr http.Header, req *jsonrpc.Request) (context.Context, trace.Span) {
	if b.tracer == nil {
		return ctx, nil
	}
	ctx = extractTraceContext(ctx, hdr, req.Params)
	ctx, span := b.tracer.Start(ctx, "mcp "+spanMethod(req.Method), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrVHost.String(vhostName), attrMethod.String(wire.Clip(req.Method)), attrProtocol.String(protocol)))
	return ctx, span
}

// endRequest records how the request ended and ends its span.
func endRequest(span trace.Span, resp *jsonrpc.Response) {
	if span == nil {
		return
	}
	outcome := requestOK
	if resp != nil && resp.Error != nil {
		outcome = requestError
		var e *jsonrpc.Error
		if errors.As(resp.Error, &e) {
			span.SetAttributes(attrErrorCode.Int64(e.Code))
			if e.Code == CodeRequestCancelled {
				outcome = requestCancelled
			}
		}
		span.SetStatus(codes.Error, wire.Clip(resp.Error.Error()))
	}
	span.SetAttributes(attrOutcome.String(outcome))
	span.End()
}

// annotateTarget names the published identifier and the backend a routed
// request resolved to on the request's span.
func (b *base) annotateTarget(ctx context.Context, t *target) {
	if b.tracer == nil {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attrName.String(t.public), attrBackend.String(t.backend))
	}
}

// annotateCacheHits counts a list's pages that came from the list cache:
// those backends have no span of their own.
func (b *base) annotateCacheHits(ctx context.Context, hits int) {
	if b.tracer == nil || hits == 0 {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(attrCached.Int(hits))
}

// startBackend opens the span of one backend exchange (or probe) under
// the request's. snap, when known, says which protocol it speaks.
func (b *base) startBackend(ctx context.Context, v *vhost, key, method string, snap *store.BackendSnapshot) (context.Context, trace.Span) {
	if b.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attrVHost.String(v.name), attrBackend.String(key), attrMethod.String(method)}
	if snap.OK() {
		attrs = append(attrs, attrProtocol.String(snap.ProtocolVersion))
	}
	return b.tracer.Start(ctx, "backend "+key+" "+method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endBackend records an exchange's outcome (the Observer's) and ends its
// span. err's text names the backend and the step, never a URL or a
// header value (upstream.Error).
func endBackend(span trace.Span, resp *jsonrpc.Response, err error, outcome string) {
	if span == nil {
		return
	}
	span.SetAttributes(attrOutcome.String(outcome))
	switch {
	case err != nil:
		span.SetStatus(codes.Error, wire.Clip(err.Error()))
	case resp != nil && resp.Error != nil:
		var e *jsonrpc.Error
		if errors.As(resp.Error, &e) {
			span.SetAttributes(attrErrorCode.Int64(e.Code))
		}
	}
	span.End()
}

// endProbe ends the span of a discovery or initialize probe with what it
// learned.
func endProbe(span trace.Span, snap *store.BackendSnapshot) {
	if span == nil {
		return
	}
	if snap.OK() {
		span.SetAttributes(attrOutcome.String(OutcomeOK), attrProtocol.String(snap.ProtocolVersion))
	} else {
		span.SetAttributes(attrOutcome.String(OutcomeTransportError))
		span.SetStatus(codes.Error, wire.Clip(snap.Error))
	}
	span.End()
}

// extractTraceContext returns ctx carrying the client's trace context and
// W3C baggage: from params._meta when it holds a valid traceparent (with
// its tracestate and baggage), else from hdr. The baggage goes on to the
// backends with the trace context (router/upstream/trace_context.go).
func extractTraceContext(ctx context.Context, hdr http.Header, params json.RawMessage) context.Context {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	if bytes.Contains(params, []byte(`"traceparent"`)) {
		var p struct {
			Meta struct {
				Traceparent string `json:"traceparent"`
				Tracestate  string `json:"tracestate"`
				Baggage     string `json:"baggage"`
			} `json:"_meta"`
		}
		if json.Unmarshal(params, &p) == nil && p.Meta.Traceparent != "" {
			c := propagation.MapCarrier{"traceparent": p.Meta.Traceparent}
			if p.Meta.Tracestate != "" {
				c["tracestate"] = p.Meta.Tracestate
			}
			if p.Meta.Baggage != "" {
				c["baggage"] = p.Meta.Baggage
			}
			if mctx := prop.Extract(ctx, c); trace.SpanContextFromContext(mctx).IsValid() {
				return mctx
			}
		}
	}
	if hdr == nil {
		return ctx
	}
	return prop.Extract(ctx, propagation.HeaderCarrier(hdr))
}

// spanMethod is the method as a span name: one the gateway serves (it
// has a row, methods.go), or "other", so a client cannot mint span names.
func spanMethod(method string) string {
	if rowOf(method).serving != notServed {
		return method
	}
	return "other"
}

// Metrics: the router tells an Observer how each backend exchange went.

// Observer learns how each backend exchange went. It lets a metrics
// package count backend traffic without the router importing it (the
// arrows stay one-way: internal/metrics implements this interface).
// BackendCall runs on the request path, so it must be cheap and must not
// block.
type Observer interface {
	BackendCall(vhost, backend, method string, d time.Duration, outcome string)
}

// ListCacheObserver is an optional extension of Observer: an Observer
// that also implements it learns whether each page of a backend with a
// list cache came from the cache (see router/listcache).
type ListCacheObserver interface {
	ListCacheLookup(vhost, backend string, hit bool)
}

// PluginObserver is an optional extension of Observer: an Observer that
// also implements it learns each decision a plugin reports
// (HookCall.Decided), and each rate-limit decision (plugin "rate_limit",
// decision "allow" or "deny").
type PluginObserver interface {
	PluginDecision(plugin, decision string)
}

// Outcomes of a backend exchange, as passed to Observer.BackendCall. The
// set is closed so a metric label built from it stays bounded.
const (
	// OutcomeOK: the backend answered with a result.
	OutcomeOK = "ok"
	// OutcomeRPCError: the backend answered with a JSON-RPC error.
	OutcomeRPCError = "rpc_error"
	// OutcomeTimeout: the backend's timeout or the caller's deadline fired.
	OutcomeTimeout = "timeout"
	// OutcomeCancelled: the client cancelled or went away first.
	OutcomeCancelled = "cancelled"
	// OutcomeTransportError: no answer (connect, HTTP status, protocol).
	OutcomeTransportError = "transport_error"
)

// outcome classifies what withBackend returns.
func outcome(resp *jsonrpc.Response, err error) string {
	switch {
	case err == nil && resp != nil && resp.Error != nil:
		return OutcomeRPCError
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	default:
		return OutcomeTransportError
	}
}

// The audit trail (handler/audit_trail.go) records who called what and
// whether it was allowed. Some of that only the router knows: which
// backend took a request, that a name was refused by an access rule
// (which the client is told as "unknown", on purpose) or a plugin, and the
// request's trace id. The handler gives the call an AuditNote (Call.Audit)
// when the trail is on; the router fills it in as it decides. Without one
// nothing is noted and nothing is spent.

// AuditNote is what the router tells the audit trail of one request.
type AuditNote struct {
	// Backend is the key of the backend the request was routed to.
	Backend string
	// Name is the published name the request was routed by, when the
	// router resolved it otherwise than the client wrote it (a raw tool
	// name an MCP App used).
	Name string
	// Denied, with Reason, says an access rule or a plugin refused it.
	Denied bool
	Reason string
	// TraceID is the request's trace, when traced.
	TraceID string
	// Task is the digest of the gateway-run task the request created or
	// answered (taskrun.IDDigest), which the task's end is recorded under.
	Task string
}

// noteTrace records the trace of c's request span (nil: not traced).
func noteTrace(c *Call, span trace.Span) {
	if n := c.Audit; n != nil && span != nil && span.SpanContext().IsSampled() {
		n.TraceID = span.SpanContext().TraceID().String()
	}
}

// noteTask records the gateway-run task a request created or answered.
func noteTask(c *Call, id string) {
	if n := c.Audit; n != nil {
		n.Task = taskrun.IDDigest(id)
	}
}

// noteRouted records where a routed request went.
func noteRouted(c *Call, t *target) {
	if n := c.Audit; n != nil && t != nil {
		n.Backend = t.backend
	}
}

// noteDenied records a refusal by an access rule or a plugin.
func noteDenied(c *Call, reason string) {
	if n := c.Audit; n != nil {
		n.Denied, n.Reason = true, reason
	}
}

// hookRefusal is hookError, noted in c's audit note when a plugin denied
// the request.
func hookRefusal(c *Call, err error) *jsonrpc.Error {
	e := hookError(err)
	var d *hook.Denial
	if errors.As(err, &d) {
		noteDenied(c, d.Message)
	}
	return e
}
