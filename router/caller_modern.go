package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The 2026-07-28 request's side of a call (caller.go): no session; its
// peer is its _meta and the discovery cache (ModernClient.peer); it cannot be
// sent requests, so it is asked with input_required rounds (a backend's
// own, passed with their state sealed; a 2025-era backend's questions by
// parking the call, parking.go); its results carry the envelope; and
// it makes its own Mcp-Param-* headers.

// ModernClient is what a 2026-07-28 request says of its client, in its
// _meta (the transport has checked it and the headers), and the runtime
// that holds its calls parked on 2025-era backends.
type ModernClient struct {
	ClientCapabilities json.RawMessage
	ClientInfo         json.RawMessage
	LogLevel           string
	// Parks holds calls to 2025-era backends that ask the client
	// something (parking.go); nil: such requests get -32601.
	Parks *Parking

	// ask is the round of the parked call this is the run of (parked);
	// nil: the call is not parked, and the backend's requests are refused.
	ask taskrun.Ask
}

// parked is m as a parked call's run sees it: its questions go to ask,
// the hidden task's round.
func (m *ModernClient) parked(ask taskrun.Ask) *ModernClient {
	cp := *m
	cp.ask = ask
	return &cp
}

func (m *ModernClient) facts() callerFacts {
	return callerFacts{protocolVersion: wire.ModernProtocolVersion, capabilities: m.ClientCapabilities, inRounds: true}
}

func (m *ModernClient) serve(ctx context.Context, r *Router, v *vhost, c *Call) *jsonrpc.Response {
	var resp *jsonrpc.Response
	if c.d.search {
		resp = r.fed.serveSearch(ctx, v, c) // tool_search.go
	} else {
		resp = r.handleModern(ctx, v, c)
	}
	return withModernStatus(resp)
}

// withModernStatus gives a 2026-07-28 answer's error the HTTP status the
// revision sends it with (wire.ModernStatus: 404, 400, or 200 like a
// result), for the transport to write (Refusal). A Failure keeps the
// status the router gave it.
func withModernStatus(resp *jsonrpc.Response) *jsonrpc.Response {
	var e *jsonrpc.Error
	var f *Failure
	if resp == nil || resp.Error == nil || errors.As(resp.Error, &f) || !errors.As(resp.Error, &e) {
		return resp
	}
	if status := wire.ModernStatus(e.Code); status != http.StatusOK {
		return refuse(resp.ID, status, 0, e)
	}
	return resp
}

// peer is a 2026-07-28 request's: its own _meta, and the discovery
// cache's snapshots of the vhost's backends; no session. A routed request
// waits only for its target's discovery (when nothing is known of it
// yet): the others serve as known or are left out.
func (m *ModernClient) peer(ctx context.Context, r *backendLink, v *vhost, c *Call) *peer {
	p := newPeer("", v.name, m.ClientCapabilities, m.LogLevel, make(map[string]*store.BackendSnapshot, len(v.keys)))
	var need func(string) bool
	if c.d != nil && c.d.t != nil {
		target := c.d.t.backend
		need = func(key string) bool { return key == target }
	}
	for key, d := range r.discoveries(ctx, v, c.Header, need) {
		p.backends[key] = d.snap
	}
	return p
}

// taskPeer: the request's _meta, with the discovery cache's snapshot of
// the backend holding the task.
func (m *ModernClient) taskPeer(ctx context.Context, r *backendLink, v *vhost, c *Call, backend string) *peer {
	p := newPeer("", v.name, m.ClientCapabilities, m.LogLevel, nil)
	if backend != "" {
		p.backends = map[string]*store.BackendSnapshot{backend: r.backendDiscovery(ctx, v, backend, c.Header).snap}
	}
	return p
}

func (*ModernClient) finish(ctx context.Context, r *base, resp *jsonrpc.Response, method string, hints *envelope.Hints) *jsonrpc.Response {
	return r.finishModern(ctx, resp, method, hints)
}

// pageFields decorates a page with the envelope, its hints the pages'
// and the vhost's access rules'.
func (*ModernClient) pageFields(r *base, v *vhost, method string, hints func() envelope.Hints, walkPrivate bool) (func(map[string]json.RawMessage), bool) {
	h := hints()
	h.Private = h.Private || walkPrivate
	final := v.accessHints(method, &h)
	return func(m map[string]json.RawMessage) { envelope.DecorateFields(m, final, r.clientInfo()) }, final.Private
}

func (m *ModernClient) asker() askFunc {
	if m.ask == nil {
		return nil
	}
	return askThrough(m.ask) // caller_task.go
}

// clientParamHeaders: the client made its own for its arguments (a
// call_tool's are call_tool's, for call_tool's arguments: none to use).
func (*ModernClient) clientParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, backendModern bool) (http.Header, *jsonrpc.Error) {
	if !wire.MethodOf(c.Request.Method).ParamHeaders || c.d.unwrapped {
		return nil, nil
	}
	if !backendModern {
		// Translated to a 2025-era backend, which never reads them: the
		// gateway checks them.
		if e := r.checkParamHeaders(ctx, v, c, t); e != nil {
			return nil, e
		}
	}
	return paramHeaders(c.Header), nil
}

// gatewayParamHeaders: made only where the client's do not fit the
// arguments: a call_tool's, or arguments a pre-hook rewrote.
func (*ModernClient) gatewayParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, backendModern bool) *target {
	if !c.d.unwrapped && bytes.Equal(params, sent) {
		return t
	}
	return madeParamHeaders(ctx, r, v, c, t, params, backendModern) // caller_session.go
}

// backendResult: a 2026-07-28 backend's envelope is the client's own; a
// 2025-era backend's result is decorated when the call is finished.
func (*ModernClient) backendResult(result json.RawMessage, _, _ bool) json.RawMessage { return result }

// streams: what a request's stream carries must relate to the request:
// its progress, and log messages when the request named a log level.
// List changes and resource updates reach it through subscriptions/listen.
func (*ModernClient) streams(method string, p *peer) bool {
	return wire.NotificationOf(method).Log && p.logLevel != ""
}

func (*ModernClient) listenersChanged(context.Context, store.SessionID) {}

func (*ModernClient) signIn(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response {
	return r.signInRound(ctx, v, c, t, sr, canURL) // sign_in.go
}

// taskRound is an ordinary input_required round; its retry answers the
// task (answerTaskInput).
func (*ModernClient) taskRound(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, task *store.Task, now store.Task) *jsonrpc.Response {
	state, err := r.sealState(ctx, binding(v, c, t), sealed.RequestState{Backend: t.backend, Task: task.ID})
	if err != nil {
		return r.storeUnavailable(c.Request.ID, err)
	}
	result := map[string]json.RawMessage{"inputRequests": wire.RawObject(now.InputRequests)}
	result["resultType"], _ = json.Marshal(envelope.ResultInputRequired)
	result["requestState"], _ = json.Marshal(state)
	return resultResponse(c.Request.ID, wire.RawObject(result))
}

// relay: a call that may ask its client something parks when its backend
// is a 2025-era one, which asks on a stream this client does not have
// (parking.go), unless this is the parked call's own run, or nothing
// parks here (Parks nil: the backend's requests get -32601).
func (m *ModernClient) relay(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	if m.Parks != nil && m.ask == nil && multiRoundTrip(c.Request.Method) {
		if snap := c.peer.backends[t.backend]; snap.OK() && !modernSnapshot(snap) {
			return r.parkStart(ctx, v, c, m, t, params, sent, hc)
		}
	}
	return r.relay(ctx, v, c, t, params, sent, hc)
}

// resumeParked delivers the retry's answers to its parked call, when
// calls park here.
func (m *ModernClient) resumeParked(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, st *sealed.RequestState) *jsonrpc.Response {
	switch {
	case m.Parks == nil:
		return nil
	case st.Backend != t.backend:
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: it was not issued for this request"))
	}
	return r.parkRetry(ctx, v, c, m.Parks, t, st)
}

// exchange: the backend's input_required rounds are the client's own.
func (*ModernClient) exchange(ctx context.Context, _ *routedCalls, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error) {
	return conn.CallWith(ctx, method, params, cs.onMessage, opts)
}

// A 2026-07-28 request reaches the same core (serve) as a session's. What
// a session held (the client's capabilities and log level, each backend's
// snapshot) comes from the request instead: its _meta, and the instance's
// discovery cache. Nothing is read from or written to the
// store on the way, so any instance serves any request with no round trip
// but the backend's.

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

// decorateModern adds the 2026-07-28 envelope, with the gateway's
// serverInfo, to a result (package router/envelope).
func (b *base) decorateModern(result json.RawMessage, hints *envelope.Hints) (json.RawMessage, error) {
	return envelope.Decorate(result, hints, b.clientInfo())
}
