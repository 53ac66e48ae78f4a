package session

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A cancel may reach any instance; the request it names may run on another
// one, or not have arrived yet. The store carries it both ways at once: a
// mark in the session (seen by a request that arrives after its cancel,
// when it loads the session) and a broadcast (seen by the instance running
// it), written in one step.

// cancelMarkTTL is how long a cancel for a request running nowhere is
// remembered: the mark only serves a request that its cancel overtook (sent
// first, on another connection, to another instance), which arrives within
// seconds or not at all. An expired mark costs nothing; the store drops it.
const cancelMarkTTL = store.DefaultCancelMarkTTL

// Notify handles a client notification of the session. notifications/cancelled
// stops the request it names on whichever instance runs it: directly when it
// runs here, else through the store. Other notifications need nothing.
func (rt *Runtime) Notify(ctx context.Context, sess *store.Session, n *jsonrpc.Request) error {
	if !wire.NotificationOf(n.Method).Cancel {
		return nil
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if len(n.Params) == 0 || json.Unmarshal(n.Params, &p) != nil {
		return nil // malformed notifications are ignored, as the spec asks
	}
	id, ok := rawIDKey(p.RequestID)
	if !ok {
		return nil
	}
	if rt.inflight.cancelCall(sess.ID, id) {
		return nil
	}
	msg := store.BusMessage{Kind: store.BusCancel, Session: sess.ID, ID: id}
	return rt.store.MarkCancelled(ctx, sess.ID, id, msg, cancelMarkTTL, rt.opts.SessionTTL)
}

// Track registers request id of the session so a cancel, from any
// instance, reaches it, and honours a cancel that arrived before it (the
// mark in the loaded session): the returned context is then cancelled with
// cause router.ErrCancelledByClient. The returned func unregisters the
// request and clears a mark acted on; call it when the request ends.
func (rt *Runtime) Track(ctx context.Context, sess *store.Session, reqID jsonrpc.ID) (context.Context, func()) {
	id := idKey(reqID)
	ctx, cancel := context.WithCancelCause(ctx)
	rt.inflight.addCall(sess.ID, id, cancel)
	marked := sess.Cancelled[id]
	if marked {
		cancel(router.ErrCancelledByClient)
	}
	return ctx, func() {
		rt.inflight.removeCall(sess.ID, id)
		cancel(nil)
		if marked || errors.Is(context.Cause(ctx), router.ErrCancelledByClient) {
			// Best effort: a stale mark only lives until it expires.
			if err := rt.store.ClearCancelled(context.WithoutCancel(ctx), sess.ID, id); err != nil {
				rt.log.Warn("clearing a cancel mark failed", "error", err)
			}
		}
	}
}
