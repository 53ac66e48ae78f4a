package router

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// handleModern answers a 2026-07-28 request (Serve), admitted: the
// methods the gateway answers for it alone (server/discover,
// subscriptions/listen) here; any other through the core (serve) with the
// discovery cache's snapshots as its peer (Serve made it), its result decorated (a call
// that may ask the client something parks in routed: ModernClient.relay).
func (r *Router) handleModern(ctx context.Context, v *vhost, c *Call) (resp *jsonrpc.Response) {
	method, row := c.Request.Method, rowOf(c.Request.Method)
	switch {
	case row.serving == byGateway && row.Modern:
		return row.answer(r, ctx, v, c)
	case row.serving == taskMethod:
		return r.tasks.routeTask(ctx, v, c) // the task's own call was admitted and hooked
	}
	resp = r.serve(ctx, v, c)
	if row.serving == fanOut && resp.Error == nil {
		return resp // decorated as it was assembled (list_fanout.go)
	}
	return r.finishModern(ctx, resp, method, v.accessHints(method, nil))
}

// finishModern turns a response into a 2026-07-28 one: results decorated;
// a backend's version refusal, which is about the gateway's link to it and
// not the client's request, reported as the gateway's failure.
func (b *base) finishModern(ctx context.Context, resp *jsonrpc.Response, method string, hints *envelope.Hints) *jsonrpc.Response {
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
	out, err := b.decorateModern(resp.Result, hints)
	if err != nil {
		b.log.Warn("a backend result is not a JSON object", "method", method, "error", err)
		return errorResponse(resp.ID, rpcError(CodeInternalError, "a backend's result is not a JSON object"))
	}
	return resultResponse(resp.ID, out)
}

// modernDiscover answers server/discover for the virtual host: built from
// every backend's discovery, never one backend's answer, like initialize.
func (r *Router) modernDiscover(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	snaps := make(map[string]*store.BackendSnapshot, len(v.keys))
	hints := envelope.Hints{TTLMs: -1}
	for key, d := range r.link.allDiscoveries(ctx, v, c.Header) {
		snaps[key] = d.snap
		if d.snap.OK() && (hints.TTLMs < 0 || d.ttlMs < hints.TTLMs) {
			hints.TTLMs = d.ttlMs
		}
	}
	hints.TTLMs = max(hints.TTLMs, 0)
	shown := v.visibleSnapshots(c.d.access, snaps) // what this caller may see
	result := map[string]any{
		"supportedVersions": wire.AllProtocolVersions(),
		"capabilities":      r.tasks.advertiseTasks(v, capability.Merged(shown, capability.ModernExtensions), capability.ModernExtensions),
	}
	if ins := capability.JoinedInstructions(v.keys, shown); ins != "" {
		result["instructions"] = ins
	}
	raw, _ := json.Marshal(result)
	return r.finishModern(ctx, resultResponse(c.Request.ID, raw), "server/discover", v.accessHints("server/discover", &hints))
}

// decorateModern adds the 2026-07-28 envelope, with the gateway's
// serverInfo, to a result (package router/envelope).
func (b *base) decorateModern(result json.RawMessage, hints *envelope.Hints) (json.RawMessage, error) {
	return envelope.Decorate(result, hints, b.clientInfo())
}
