package router

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Protocol 2026-07-28 requests reach the same federation code as session
// requests. What a session held (the client's capabilities and log level,
// each backend's snapshot) comes from the request instead: its _meta, and
// the instance's discovery cache. Nothing is read from or written to the
// store on the way, so any instance serves any request with no round trip
// but the backend's.

// modernSnapshot reports whether a backend snapshot is a 2026-07-28
// backend's (from discovery): every request to it is one exchange.
func modernSnapshot(snap *store.BackendSnapshot) bool {
	return snap.OK() && snap.ProtocolVersion == wire.ModernProtocolVersion
}

// ModernCall is one request of protocol 2026-07-28. The transport has
// checked its _meta and headers.
type ModernCall struct {
	VHost     string
	Principal string
	// Claims are the request's token claims, for access rules (nil: none).
	Claims map[string]any
	// Header is the downstream request's headers, for passthrough_headers.
	Header  http.Header
	Request *jsonrpc.Request
	// ClientCapabilities, ClientInfo and LogLevel are the request's _meta.
	ClientCapabilities json.RawMessage
	ClientInfo         json.RawMessage
	LogLevel           string
	// Stream carries the request's own notifications (progress, log
	// messages), and a listen's; nil when the client accepts no stream.
	Stream Stream
	// Parks holds calls to 2025-era backends that ask the client
	// something (modern_park.go); nil: such requests get -32601.
	Parks ParkRuntime

	// access is the request's access decision, taken on first use
	// (modernAccess); admitted: its rate limits were counted (AdmitModern).
	access   *policy.View
	admitted bool
}

// HandleModern answers one modern request.
func (r *Router) HandleModern(ctx context.Context, c *ModernCall) (resp *jsonrpc.Response) {
	if r.tracer != nil {
		var span trace.Span
		ctx, span = r.startRequest(ctx, c.VHost, wire.ModernProtocolVersion, c.Header, c.Request)
		defer func() { endRequest(span, resp) }()
	}
	v, ok := r.table.Load().vhosts[c.VHost]
	if !ok {
		return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "virtual host %s is no longer configured", wire.Quote(c.VHost)))
	}
	method := c.Request.Method
	switch method {
	case "server/discover":
		return r.modernDiscover(ctx, v, c)
	case "subscriptions/listen":
		return r.listen(ctx, v, c)
	}
	access := modernAccess(v, c) // decided once for the request, whichever path it takes
	if resp := r.admitModern(ctx, v, c); resp != nil {
		return resp // over a rate limit: no backend, not even discovery
	}
	if resp := r.parkable(ctx, v, c, access); resp != nil {
		return resp
	}
	call := &Call{Session: r.modernView(ctx, v, c), Claims: c.Claims, Header: c.Header, Request: c.Request, Stream: c.Stream,
		modern: true, access: access, admitted: true}
	resp = r.Handle(ctx, call)
	if call.decorated && resp.Error == nil {
		return resp
	}
	return r.finishModern(ctx, resp, method, v.accessHints(method, nil))
}

// finishModern turns a response into a 2026-07-28 one: results decorated;
// a backend's version refusal, which is about the gateway's link to it and
// not the client's request, reported as the gateway's failure.
func (r *Router) finishModern(ctx context.Context, resp *jsonrpc.Response, method string, hints *envelope.Hints) *jsonrpc.Response {
	if resp.Error != nil {
		var e *jsonrpc.Error
		if errors.As(resp.Error, &e) && e.Code == wire.CodeUnsupportedProtocolVersion {
			return errorResponse(resp.ID, rpcError(CodeInternalError, "a backend refused the gateway's protocol version: %s", e.Message))
		}
		return resp
	}
	if !envelope.Cacheable(method) {
		hints = nil
	} else if hints == nil {
		hints = &envelope.Hints{FromResult: true} // a routed result: the backend's own hints
	}
	out, err := r.decorateModern(resp.Result, hints)
	if err != nil {
		r.log.Warn("a backend result is not a JSON object", "method", method, "error", err)
		return errorResponse(resp.ID, rpcError(CodeInternalError, "a backend's result is not a JSON object"))
	}
	return resultResponse(resp.ID, out)
}

// modernView is the session a modern request stands for: never stored,
// with the request's own client and the discovery cache's snapshots.
func (r *Router) modernView(ctx context.Context, v *vhost, c *ModernCall) *store.Session {
	sess := &store.Session{Principal: c.Principal, VHost: v.name, ProtocolVersion: wire.ModernProtocolVersion,
		ClientInfo: c.ClientInfo, ClientCapabilities: c.ClientCapabilities, LogLevel: c.LogLevel,
		Backends: make(map[string]*store.BackendSnapshot, len(v.keys))}
	for key, d := range r.allDiscoveries(ctx, v, c.Header) {
		sess.Backends[key] = d.snap
	}
	return sess
}

// modernDiscover answers server/discover for the virtual host: built from
// every backend's discovery, never one backend's answer, like initialize.
func (r *Router) modernDiscover(ctx context.Context, v *vhost, c *ModernCall) *jsonrpc.Response {
	snaps := make(map[string]*store.BackendSnapshot, len(v.keys))
	hints := envelope.Hints{TTLMs: -1}
	for key, d := range r.allDiscoveries(ctx, v, c.Header) {
		snaps[key] = d.snap
		if d.snap.OK() && (hints.TTLMs < 0 || d.ttlMs < hints.TTLMs) {
			hints.TTLMs = d.ttlMs
		}
	}
	hints.TTLMs = max(hints.TTLMs, 0)
	shown := snaps // what this caller may see
	if a := modernAccess(v, c); a != nil {
		shown = v.visibleSnapshots(*a, snaps)
	}
	result := map[string]any{
		"supportedVersions": wire.AllProtocolVersions(),
		"capabilities":      capability.Merged(shown),
	}
	if ins := capability.JoinedInstructions(v.keys, shown); ins != "" {
		result["instructions"] = ins
	}
	raw, _ := json.Marshal(result)
	return r.finishModern(ctx, resultResponse(c.Request.ID, raw), "server/discover", v.accessHints("server/discover", &hints))
}

// decorateModern adds the 2026-07-28 envelope, with the gateway's
// serverInfo, to a result (package router/envelope).
func (r *Router) decorateModern(result json.RawMessage, hints *envelope.Hints) (json.RawMessage, error) {
	return envelope.Decorate(result, hints, r.clientInfo())
}
