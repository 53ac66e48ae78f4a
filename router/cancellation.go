package router

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrNoPendingRequest is returned by Deliver for a client response whose id
// matches no server-to-client request of the session.
var ErrNoPendingRequest = errors.New("no server request with this id is pending")

// Notify handles a client notification. notifications/cancelled stops the
// request it names on whichever instance runs it: directly when it runs
// here, else through the store, which both marks the request cancelled in
// the session (for a request that has not arrived yet) and broadcasts the
// cancel (for one running elsewhere).
func (r *Router) Notify(ctx context.Context, c *Call) error {
	switch c.Request.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil {
			return nil // malformed notifications are ignored, as the spec asks
		}
		id, ok := rawIDKey(p.RequestID)
		if !ok {
			return nil
		}
		if r.inflight.cancelCall(c.Session.ID, id) {
			return nil
		}
		msg := store.BusMessage{Kind: store.BusCancel, Session: c.Session.ID, ID: id}
		return r.opts.Store.MarkCancelled(ctx, c.Session.ID, id, msg, cancelMarkTTL, r.opts.SessionTTL)
	}
	return nil
}

// Deliver routes the client's response to a server-to-client request to
// the instance waiting for it: directly when it waits here, else stored in
// the session and broadcast in one step, so an answer whose broadcast is
// lost is still found by the waiter's poll.
func (r *Router) Deliver(ctx context.Context, sess *store.Session, resp *jsonrpc.Response) error {
	id := idKey(resp.ID)
	if r.inflight.deliver(sess.ID, id, resp) {
		return nil
	}
	owner, ok := sess.Pending[id]
	if !ok {
		return ErrNoPendingRequest
	}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return err
	}
	msg := store.BusMessage{Kind: store.BusResponse, Session: sess.ID, ID: id, Data: data, To: owner}
	err = r.opts.Store.PostAnswer(ctx, sess.ID, id, data, msg, r.opts.SessionTTL)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNoPendingRequest // answered meanwhile, or the session ended
	}
	return err
}

// cancelMarkTTL is how long a cancel for a request running nowhere is
// remembered: the mark only serves a request that its cancel overtook (sent
// first, on another connection, to another instance), which arrives within
// seconds or not at all. An expired mark costs nothing; the store drops it.
const cancelMarkTTL = store.DefaultCancelMarkTTL

// track registers a call so a cancel can reach it, and honours a cancel
// that arrived before it (the mark in the loaded session). The returned
// func unregisters the call and clears a mark acted on.
func (r *Router) track(ctx context.Context, c *Call) (context.Context, func()) {
	id := idKey(c.Request.ID)
	ctx, cancel := context.WithCancelCause(ctx)
	r.inflight.addCall(c.Session.ID, id, cancel)
	marked := c.Session.Cancelled[id]
	if marked {
		cancel(errCancelledByClient)
	}
	return ctx, func() {
		r.inflight.removeCall(c.Session.ID, id)
		cancel(nil)
		if marked || errors.Is(context.Cause(ctx), errCancelledByClient) {
			// Best effort: a stale mark only lives until it expires.
			if err := r.opts.Store.ClearCancelled(context.WithoutCancel(ctx), c.Session.ID, id); err != nil {
				r.log.Warn("clearing a cancel mark failed", "error", err)
			}
		}
	}
}

// cancelledResponse answers a call the client cancelled. The client has
// stopped waiting; the answer only closes the HTTP exchange.
func cancelledResponse(id jsonrpc.ID) *jsonrpc.Response {
	return errorResponse(id, rpcError(CodeRequestCancelled, "request cancelled by the client"))
}
