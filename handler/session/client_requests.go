package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend may ask the client something during a call (sampling,
// elicitation, roots). The instance running the call sends the request on
// the call's event stream under an id it issues and waits; the client's
// answer is a POST that may reach any instance. That instance finds the
// waiting one in the session (the pending mark written before the request
// was sent) and stores the answer in the session while publishing it, in
// one step, so an answer whose broadcast is lost is still found by the
// waiter's poll.

// ErrNoPendingRequest is returned by Deliver for a client response whose id
// matches no server-to-client request of the session.
var ErrNoPendingRequest = errors.New("no server request with this id is pending")

// answerPoll is how often a waiting server-to-client request looks for an
// answer stored in the session (see Deliver): the bound on the delay a
// lost bus message costs.
const answerPoll = 2 * time.Second

// AskClient sends req to the client on the call's stream under a
// gateway-issued id and waits for the answer, which any instance may
// receive (see Deliver). It is the router.SessionRuntime method a routed
// call uses; the caller has checked the client's capability. A call whose
// client accepts no event stream cannot be asked anything: a session's
// client hears the gateway's requests only there.
func (rt *Runtime) AskClient(ctx context.Context, c *router.Call, req *jsonrpc.Request) *jsonrpc.Response {
	if c.Stream == nil {
		return errorAnswer(router.CodeInternalError, "the client cannot receive requests on this call (it accepts no event stream)")
	}
	sid := c.Session().ID
	id, _ := jsonrpc.MakeID(string(store.NewServerRequestID()))
	key := serverRequestKey(id)
	ch := rt.inflight.addWaiter(sid, key)
	defer rt.inflight.removeWaiter(sid, key)
	// Recorded before the client can see the request, so its answer, on any
	// instance, finds where to go.
	if err := rt.store.AddPending(ctx, sid, key, rt.store.InstanceID(), rt.opts.SessionTTL); err != nil {
		return errorAnswer(router.CodeInternalError, "cannot record the pending request")
	}
	defer func() {
		if err := rt.store.RemovePending(context.WithoutCancel(ctx), sid, key); err != nil {
			rt.log.Warn("removing a pending client request failed", "error", err)
		}
	}()
	if err := c.Stream.Send(&jsonrpc.Request{ID: id, Method: req.Method, Params: req.Params}); err != nil {
		return errorAnswer(router.CodeInternalError, "the client stream is gone")
	}
	resp, _ := rt.awaitAnswer(ctx, sid, key, ch, req.Method)
	return resp
}

// awaitAnswer waits for the client's answer to request key of session
// (or park) sid: on ch (delivered here, or over the bus), or stored in the
// store by another instance whose message was lost. timedOut says the
// client did not answer within the client request timeout.
func (rt *Runtime) awaitAnswer(ctx context.Context, sid store.SessionID, key store.ServerRequestID, ch chan *jsonrpc.Response, method string) (_ *jsonrpc.Response, timedOut bool) {
	t := time.NewTimer(rt.opts.ClientRequestTimeout)
	defer t.Stop()
	// The answer normally arrives on ch (here, or over the bus); the poll
	// finds one whose broadcast was lost in the session.
	poll := time.NewTicker(answerPoll)
	defer poll.Stop()
	for {
		select {
		case resp := <-ch:
			return &jsonrpc.Response{Result: resp.Result, Error: resp.Error}, false
		case <-poll.C:
			if resp := rt.storedAnswer(ctx, sid, key); resp != nil {
				return resp, false
			}
		case <-t.C:
			return errorAnswer(router.CodeInternalError, fmt.Sprintf("the client did not answer %s within %s", method, rt.opts.ClientRequestTimeout)), true
		case <-ctx.Done():
			return errorAnswer(router.CodeInternalError, fmt.Sprintf("the call ended before the client answered %s", method)), false
		}
	}
}

func errorAnswer(code int64, msg string) *jsonrpc.Response {
	return &jsonrpc.Response{Error: &jsonrpc.Error{Code: code, Message: msg}}
}

// storedAnswer returns the client's answer to key if another instance
// stored it in the session.
func (rt *Runtime) storedAnswer(ctx context.Context, sid store.SessionID, key store.ServerRequestID) *jsonrpc.Response {
	data, err := rt.store.TakeAnswer(ctx, sid, key)
	if err != nil {
		if ctx.Err() == nil { // a wait that ended as it polled is no failure
			rt.log.Warn("reading a stored client answer failed", "error", err)
		}
		return nil
	}
	if data == nil {
		return nil
	}
	msg, err := wire.Decode(data)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok {
		return nil
	}
	return &jsonrpc.Response{Result: resp.Result, Error: resp.Error}
}

// Deliver routes the client's response to a server-to-client request to
// the instance waiting for it: directly when it waits here, else stored in
// the session and broadcast in one step.
func (rt *Runtime) Deliver(ctx context.Context, sess *store.Session, resp *jsonrpc.Response) error {
	id := serverRequestKey(resp.ID)
	if rt.inflight.deliver(sess.ID, id, resp) {
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
	msg := store.BusMessage{Kind: store.BusResponse, Session: sess.ID, ID: string(id), Data: data, To: owner}
	err = rt.store.PostAnswer(ctx, sess.ID, id, data, msg, rt.opts.SessionTTL)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNoPendingRequest // answered meanwhile, or the session ended
	}
	return err
}

// deliverFromBus hands an answer published by another instance to the
// local waiter, if it is still waiting.
func (rt *Runtime) deliverFromBus(m store.BusMessage) {
	msg, err := wire.Decode(m.Data)
	if resp, ok := msg.(*jsonrpc.Response); err == nil && ok {
		rt.inflight.deliver(m.Session, store.ServerRequestID(m.ID), resp)
	}
}
