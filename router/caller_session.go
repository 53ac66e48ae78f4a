package router

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The 2025 session's side of a call (caller.go): its peer is its session
// record, the backend's requests are asked on the call's stream through
// the session runtime, results pass as the backend wrote them (a
// 2026-07-28 backend's envelope stripped), and the gateway makes the
// Mcp-Param-* headers a 2026-07-28 backend reads, since the client sends
// none.

// SessionCaller is a call's client when the call belongs to a 2025-era
// session.
type SessionCaller struct {
	// Session is the session's record.
	Session *store.Session
	// Runtime asks the client on the call's stream and hears of changes
	// to the session's subscriptions (package handler/session); nil: the
	// backend's requests are refused.
	Runtime SessionRuntime
}

func (s *SessionCaller) facts() callerFacts {
	return callerFacts{protocolVersion: s.Session.ProtocolVersion, session: s.Session, capabilities: s.Session.ClientCapabilities}
}

func (s *SessionCaller) serve(ctx context.Context, r *Router, v *vhost, c *Call) *jsonrpc.Response {
	if c.d.search {
		return r.fed.serveSearch(ctx, v, c) // tool_search.go
	}
	return r.serve(ctx, v, c)
}

func (s *SessionCaller) peer(context.Context, *backendLink, *vhost, *Call) *peer {
	return sessionPeer(s.Session)
}

func (s *SessionCaller) taskPeer(context.Context, *backendLink, *vhost, *Call, string) *peer {
	return sessionPeer(s.Session) // its initialize, its snapshots
}

func (*SessionCaller) finish(_ context.Context, _ *base, resp *jsonrpc.Response, _ string, _ *envelope.Hints) *jsonrpc.Response {
	return resp // the fields as the backend (or the gateway) wrote them
}

func (*SessionCaller) pageFields(_ *base, v *vhost, _ string, _ func() envelope.Hints, walkPrivate bool) (func(map[string]json.RawMessage), bool) {
	return plainPage(v), walkPrivate
}

func (s *SessionCaller) asker() askFunc {
	if s.Runtime == nil {
		return nil
	}
	return s.Runtime.AskClient
}

// clientParamHeaders: the client sends none.
func (*SessionCaller) clientParamHeaders(context.Context, *routedCalls, *vhost, *Call, *target, bool) (http.Header, *jsonrpc.Error) {
	return nil, nil
}

func (*SessionCaller) gatewayParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, _ json.RawMessage, backendModern bool) *target {
	return madeParamHeaders(ctx, r, v, c, t, params, backendModern)
}

func (*SessionCaller) backendResult(result json.RawMessage, backendModern, isTask bool) json.RawMessage {
	return plainResult(result, backendModern, isTask)
}

// streams: a session's call stream carries whatever the backend sends it.
func (*SessionCaller) streams(string, *peer) bool { return true }

func (s *SessionCaller) listenersChanged(ctx context.Context, sid store.SessionID) {
	if s.Runtime != nil {
		s.Runtime.ListenersChanged(ctx, sid)
	}
}

func (*SessionCaller) signIn(_ context.Context, _ *routedCalls, _ *vhost, c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response {
	return signInError(c, t, sr, canURL) // sign_in.go
}

// taskRound asks the session's client the first round on its stream, as a
// synchronous call would, and hands out the task.
func (s *SessionCaller) taskRound(ctx context.Context, r *routedCalls, _ *vhost, c *Call, _ *target, task *store.Task, now store.Task) *jsonrpc.Response {
	ask := s.asker()
	if ask == nil || c.Stream == nil {
		return nil
	}
	if answers := askRound(ctx, c, ask, now.InputRequests); answers != nil {
		if err := r.opts.Tasks.Update(ctx, task.Owner, task.ID, answers); err != nil {
			r.log.Warn("task: the first answers were not posted", "task", task.ID, "error", err)
		}
	}
	return nil
}

// plainResult is a result for a client that reads no envelope: only a
// 2026-07-28 backend writes it; a task the backend created keeps its
// fields.
func plainResult(result json.RawMessage, backendModern, isTask bool) json.RawMessage {
	if backendModern && !isTask {
		return envelope.Strip(result)
	}
	return result
}

// plainPage finishes a page for a client that reads no envelope: a
// single-backend vhost's page keeps the backend's own members, less a
// 2026-07-28 backend's envelope.
func plainPage(v *vhost) func(map[string]json.RawMessage) {
	if v.single() {
		return envelope.StripFields
	}
	return nil
}

// madeParamHeaders is t with the Mcp-Param-* headers the gateway makes
// for a tools/call to a 2026-07-28 backend (param_headers.go).
func madeParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params json.RawMessage, backendModern bool) *target {
	if !backendModern || !wire.MethodOf(c.Request.Method).ParamHeaders {
		return t
	}
	return r.withParamHeaders(ctx, v, c, t, params)
}

func (*SessionCaller) relay(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	return r.relay(ctx, v, c, t, params, sent, hc)
}

func (*SessionCaller) resumeParked(context.Context, *routedCalls, *vhost, *Call, *target, *sealed.RequestState) *jsonrpc.Response {
	return nil
}

func (*SessionCaller) exchange(ctx context.Context, r *routedCalls, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error) {
	return fulfilledExchange(ctx, r, conn, cs, method, params, opts)
}

// fulfilledExchange is the exchange of a client asked otherwise than in
// rounds (a 2025 session, a task's run): a 2026-07-28 backend's
// input_required is fulfilled by the gateway, which asks the client; a
// 2025-era backend asks on the call's stream itself.
func fulfilledExchange(ctx context.Context, r *routedCalls, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error) {
	if conn.Modern() && multiRoundTrip(method) {
		return r.callFulfilling(ctx, conn, cs, method, params, opts) // input_fulfil.go
	}
	return conn.CallWith(ctx, method, params, cs.onMessage, opts)
}
