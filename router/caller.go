package router

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A call's client is one of three kinds, and what differs between them is
// decided here, once per kind, rather than by tests of the call's fields
// down the router: a 2025 session (SessionCaller: asked on its stream,
// results plain), a 2026-07-28 sessionless request (ModernClient: asked
// with input_required rounds, results enveloped), and the run of a task
// the gateway runs (taskCaller: asked through the task's input_required
// status, its result stored). Kuadrant's MCP broker splits its
// ProtocolHandler the same way, one implementation per generation. The
// backend's generation, as its link reports it, is an argument to the
// methods that depend on it, never a branch at the call site.
//
// The methods are unexported: the router owns the kinds; the fronts
// (package handler) build one with SessionCaller or ModernClient.

// Caller is the client side of a Call: how the client is served, asked,
// and given results. It is three roles, each a handful of methods, and
// what the kind of client is (facts).
type Caller interface {
	// facts are what the client is, as the router reads it.
	facts() callerFacts
	callerServing
	callerAsking
	callerPresenting
}

// callerServing is how the client's request is served: dispatched,
// relayed to its backend (or parked), with which peer.
type callerServing interface {
	// serve answers a decided request of this client (Serve's body).
	serve(ctx context.Context, r *Router, v *vhost, c *Call) *jsonrpc.Response
	// peer is the client as the backend link sees it (made once, by
	// Serve).
	peer(ctx context.Context, r *backendLink, v *vhost, c *Call) *peer
	// taskPeer is the peer a tasks/get, update or cancel is sent with,
	// with backend's snapshot ("": before one is needed).
	taskPeer(ctx context.Context, r *backendLink, v *vhost, c *Call, backend string) *peer
	// relay sends a routed call to t, decided and hooked (routed), and
	// answers it: through routedCalls.relay (routed.go), or parked where its backend would
	// ask the client on a stream it does not have (parking.go).
	relay(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response
	// resumeParked answers a retry whose request state st names a parked
	// call (parking_retry.go); nil: this client parks nothing, and the
	// state is refused.
	resumeParked(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, st *sealed.RequestState) *jsonrpc.Response
}

// callerAsking is how the client is asked for what a backend (or the
// gateway) needs of it while a call runs, and told what it listens to.
type callerAsking interface {
	// asker is how a backend's request (sampling, elicitation, roots) is
	// put to the client during the call; nil: this call cannot be asked
	// anything.
	asker() askFunc
	// exchange sends a routed call on conn, and returns the backend's
	// answer: a 2026-07-28 backend's input_required as it is, for a
	// client asked in rounds, else fulfilled by asking the client
	// (input_fulfil.go).
	exchange(ctx context.Context, r *routedCalls, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error)
	// streams reports whether a backend's notification of method goes on
	// the call's stream (progress goes in any case).
	streams(method string, p *peer) bool
	// signIn answers a routed call whose backend needs the caller to sign
	// in (canURL: the client declared URL elicitation).
	signIn(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response
	// taskRound answers an input_before_task call with its task's first
	// round (now), or asks it and returns nil: the task is handed out.
	taskRound(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, task *store.Task, now store.Task) *jsonrpc.Response
	// listenersChanged says the client's subscriptions or log level
	// changed, so whoever holds its listeners rebuilds them.
	listenersChanged(ctx context.Context, sid store.SessionID)
}

// callerPresenting is how results and arguments are written for the
// client, and for the backend on its behalf: the envelope, a page's
// fields, the Mcp-Param-* headers.
type callerPresenting interface {
	// finish makes an answer the client's (hints: a list's or the
	// gateway's own cache hints; nil for a routed result).
	finish(ctx context.Context, r *base, resp *jsonrpc.Response, method string, hints *envelope.Hints) *jsonrpc.Response
	// pageFields is how a list page's top-level members are finished while
	// the page is assembled (nil: as merged), and whether the page is
	// private to its caller (walkPrivate: what the walk found).
	pageFields(r *base, v *vhost, method string, hints func() envelope.Hints, walkPrivate bool) (func(map[string]json.RawMessage), bool)
	// backendResult is a backend's result as this client reads it:
	// backendModern says the backend speaks 2026-07-28 and wrote the
	// envelope; isTask that the result is a task the backend created.
	backendResult(result json.RawMessage, backendModern, isTask bool) json.RawMessage
	// clientParamHeaders handles the Mcp-Param-* headers the client sent
	// for a tools/call's arguments, before the pre-hooks: checked by the
	// gateway for a backend that does not read them (backendModern
	// false), else returned, for the call to carry to it
	// (target.headers); an error refuses the call.
	clientParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, backendModern bool) (http.Header, *jsonrpc.Error)
	// gatewayParamHeaders is t with the Mcp-Param-* headers the gateway
	// makes for a tools/call to a backend that reads them (backendModern),
	// where the client's do not fit params (none sent, or the arguments
	// rewritten since: sent is what the client sent).
	gatewayParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, backendModern bool) *target
}

// callerFacts are what a kind of client is, beside what it does: plain
// values, read where they matter rather than each a method of Caller.
type callerFacts struct {
	// protocolVersion is the version the client speaks, for the
	// request's span.
	protocolVersion string
	// session is the 2025 session the call belongs to; nil for a client
	// no session holds.
	session *store.Session
	// capabilities are what the client declared (its initialize, or its
	// request's _meta).
	capabilities json.RawMessage
	// inRounds: the client is asked with input_required results and
	// answers by calling again; a backend's own input_required passes to
	// it (request state sealed) rather than being fulfilled by asker.
	inRounds bool
}

// askFunc puts one backend request to the client and returns its answer.
type askFunc func(ctx context.Context, c *Call, req *jsonrpc.Request) *jsonrpc.Response
