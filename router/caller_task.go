package router

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The side of a task the gateway runs (caller.go, tasks_run.go): its run
// outlives the client's request, so it has no stream, and every question
// the backend asks (a 2025-era backend's request, a 2026-07-28 backend's
// input_required, fulfilled) becomes part of an input round of the task,
// answered by tasks/update on any instance. Its result is stored and
// inlined in tasks/get, without the envelope; its peer is fixed when the
// task starts (taskPeer).

// taskCaller is the client of a gateway-run task's run: ask is the task's
// input round (its Conversation's).
type taskCaller struct {
	ask taskrun.Ask
}

func (taskCaller) facts() callerFacts { return callerFacts{} }

// serve: a task's run relays its call directly (taskConversation), never
// through Serve; were it to, it would be served by the core as it is.
func (taskCaller) serve(ctx context.Context, r *Router, v *vhost, c *Call) *jsonrpc.Response {
	return r.serve(ctx, v, c)
}

func (taskCaller) peer(_ context.Context, _ *backendLink, _ *vhost, c *Call) *peer { return c.peer }

func (taskCaller) taskPeer(_ context.Context, _ *backendLink, _ *vhost, c *Call, _ string) *peer {
	return c.peer
}

func (taskCaller) finish(_ context.Context, _ *base, resp *jsonrpc.Response, _ string, _ *envelope.Hints) *jsonrpc.Response {
	return resp
}

func (taskCaller) pageFields(_ *base, v *vhost, _ string, _ func() envelope.Hints, walkPrivate bool) (func(map[string]json.RawMessage), bool) {
	return plainPage(v), walkPrivate // caller_session.go
}

func (a taskCaller) asker() askFunc {
	if a.ask == nil {
		return nil
	}
	return askThrough(a.ask)
}

func (taskCaller) clientParamHeaders(context.Context, *routedCalls, *vhost, *Call, *target, bool) (http.Header, *jsonrpc.Error) {
	return nil, nil
}

func (taskCaller) gatewayParamHeaders(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, _ json.RawMessage, backendModern bool) *target {
	return madeParamHeaders(ctx, r, v, c, t, params, backendModern) // caller_session.go
}

func (taskCaller) backendResult(result json.RawMessage, backendModern, isTask bool) json.RawMessage {
	return plainResult(result, backendModern, isTask) // caller_session.go
}

func (taskCaller) streams(string, *peer) bool                        { return true }
func (taskCaller) listenersChanged(context.Context, store.SessionID) {}

func (taskCaller) signIn(_ context.Context, _ *routedCalls, _ *vhost, c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response {
	return signInError(c, t, sr, canURL) // sign_in.go
}

func (taskCaller) taskRound(context.Context, *routedCalls, *vhost, *Call, *target, *store.Task, store.Task) *jsonrpc.Response {
	return nil
}

// askThrough puts a backend's request to the client as part of an input
// round of a task (a gateway-run task's, or a parked call's hidden one).
func askThrough(ask taskrun.Ask) askFunc {
	return func(ctx context.Context, _ *Call, req *jsonrpc.Request) *jsonrpc.Response {
		raw, err := json.Marshal(InputRequest{Method: req.Method, Params: req.Params})
		if err != nil {
			return &jsonrpc.Response{Error: rpcError(CodeInternalError, "cannot encode the backend's request")}
		}
		answer, err := ask(ctx, raw)
		if err != nil {
			return &jsonrpc.Response{Error: rpcError(CodeInternalError, "the task ended before the client answered")}
		}
		return &jsonrpc.Response{Result: answer}
	}
}

func (taskCaller) relay(ctx context.Context, r *routedCalls, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	return r.relay(ctx, v, c, t, params, sent, hc)
}

func (taskCaller) resumeParked(context.Context, *routedCalls, *vhost, *Call, *target, *sealed.RequestState) *jsonrpc.Response {
	return nil
}

func (taskCaller) exchange(ctx context.Context, r *routedCalls, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error) {
	return fulfilledExchange(ctx, r, conn, cs, method, params, opts) // caller_session.go
}
