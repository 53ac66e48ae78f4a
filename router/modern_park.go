package router

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2025-era backend asks its client things in the middle of a call
// (sampling, elicitation, roots): it sends a request on the call's stream
// and waits. A 2026-07-28 client cannot be sent requests; it is asked with
// an input_required result instead, and answers by calling again. So when
// a 2026-07-28 call to a 2025-era backend hears such a request, the gateway
// parks the call: it keeps the backend call running, detached from the
// client's request, and answers that request input_required, with the
// backend's request as an input request and a signed requestState that
// names the parked call and the round. The client's retry, on any
// instance, delivers its answers to the instance holding the call (the
// session runtime carries them, as it carries a 2025 client's answers),
// and gets the call's next round, or its result.
//
// The router decides when a call may park and what the client sees; the
// session runtime (handler/session) holds the call and carries the rounds
// across instances. Without a ParkRuntime (on Lambda, where an invocation
// cannot outlive its answer), the backend's request gets -32601.

// ParkRuntime holds 2026-07-28 calls to 2025-era backends across the
// rounds in which the backend asks the client something.
type ParkRuntime interface {
	// Run runs call detached from ctx's request (bounded by the backend's
	// timeout and the runtime's), giving it the asker a backend's requests
	// go to, and returns when the call completes or first needs the client.
	Run(ctx context.Context, p ParkedCall, call func(ctx context.Context, asker SessionRuntime) *jsonrpc.Response) ParkOutcome
	// Resume delivers a retry's answers to the parked call it names,
	// wherever it runs, and returns the call's next outcome.
	Resume(ctx context.Context, p ParkedCall, park store.SessionID, round int, answers map[string]json.RawMessage) ParkOutcome
}

// ParkedCall is what the runtime knows of a call it may hold.
type ParkedCall struct {
	Principal, VHost string
	// ClientCapabilities are the request's: a backend's request for a
	// capability the client did not declare gets -32601, never the client.
	ClientCapabilities json.RawMessage
}

// InputRequest is one thing a parked call asks the client.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// ParkOutcome is where a parked call stands after a round.
type ParkOutcome struct {
	// Response is the call's answer when it completed (its ID is the
	// caller's to set).
	Response *jsonrpc.Response
	// Input are the round's requests for the client, by key, when the call
	// waits for them; Park and Round name the call and the round.
	Input map[string]InputRequest
	Park  store.SessionID
	Round int
	// Err says why the parked call cannot go on: it ended, its instance
	// is gone, the store failed, or the retry was stale.
	Err *jsonrpc.Error
	// RetryAfter, with Err, refuses a call that would have parked while
	// its principal already has the most calls parked it may: the client
	// is answered HTTP 429 with it as Retry-After.
	RetryAfter time.Duration
}

// parkable routes a modern MRTR-capable call that may have to park: a
// retry of a parked call, or a call whose backend speaks the session
// protocol. It returns nil when the call takes the ordinary path.
func (r *Router) parkable(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	if c.Modern.Parks == nil || !multiRoundTrip(c.Request.Method) {
		return nil
	}
	t := c.d.t
	if c.d.rerr != nil || !v.routedVisible(c.d.access, c.Request.Method, t) {
		return nil // the ordinary path answers it (a hidden name: as unknown)
	}
	if r.gatewayTaskTool(v, c.Request.Method, t, declaresExtension(c.Modern.ClientCapabilities, wire.ExtensionTasks)) {
		return nil // run as a task, or refused, by the ordinary path (tasks_run.go)
	}
	pc := ParkedCall{Principal: c.Principal, VHost: v.name, ClientCapabilities: c.Modern.ClientCapabilities}
	if raw, ok := t.params["requestState"]; ok && string(raw) != "null" {
		var token string
		if json.Unmarshal(raw, &token) != nil {
			return nil
		}
		env, err := r.openState(ctx, sealed.Binding{VHost: v.name, Principal: c.Principal, Method: c.Request.Method, Target: t.public}, token)
		switch {
		case errors.Is(err, errStoreUnavailable):
			return r.storeUnavailable(c.Request.ID, err)
		case err != nil || env.Park == "":
			return nil // the ordinary path refuses it, or unwraps a backend's state
		case env.Backend != t.backend:
			return errorResponse(c.Request.ID, invalidParams("invalid requestState: it was not issued for this request"))
		}
		var answers map[string]json.RawMessage
		_ = json.Unmarshal(t.params["inputResponses"], &answers)
		return r.parkAnswer(ctx, v, c, t, c.Modern.Parks.Resume(ctx, pc, env.Park, env.Round, answers))
	}
	if d := r.backendDiscovery(ctx, v, t.backend, c.Header); !d.snap.OK() || modernSnapshot(d.snap) {
		return nil // a 2026-07-28 backend asks with input_required itself
	}
	return r.parkAnswer(ctx, v, c, t, c.Modern.Parks.Run(ctx, pc, func(ctx context.Context, asker SessionRuntime) *jsonrpc.Response {
		call := *c // the call as the parked run sees it: its questions go to asker
		call.peer, call.Runtime = r.modernPeer(ctx, v, c), asker
		return r.serve(ctx, v, &call)
	}))
}

// parkAnswer turns a parked call's outcome into the client's answer: the
// result, or input_required with the round's requests and a sealed state.
func (r *Router) parkAnswer(ctx context.Context, v *vhost, c *Call, t *target, o ParkOutcome) *jsonrpc.Response {
	method := c.Request.Method
	switch {
	case o.Err != nil && o.RetryAfter > 0:
		return refuse(c.Request.ID, http.StatusTooManyRequests, o.RetryAfter, o.Err)
	case o.Err != nil:
		return errorResponse(c.Request.ID, o.Err)
	case o.Response != nil:
		resp := *o.Response
		resp.ID = c.Request.ID
		return r.finishModern(ctx, &resp, method, v.accessHints(method, nil))
	}
	token, err := r.sealState(ctx, sealed.Binding{VHost: v.name, Principal: c.Principal, Method: method, Target: t.public},
		sealed.RequestState{Backend: t.backend, Park: o.Park, Round: o.Round})
	if err != nil {
		return r.storeUnavailable(c.Request.ID, err)
	}
	inputs := make(map[string]json.RawMessage, len(o.Input))
	for k, in := range o.Input {
		inputs[k], _ = json.Marshal(in)
	}
	result := map[string]json.RawMessage{"inputRequests": wire.RawObject(inputs)}
	result["resultType"], _ = json.Marshal(envelope.ResultInputRequired)
	result["requestState"], _ = json.Marshal(token)
	return r.finishModern(ctx, resultResponse(c.Request.ID, wire.RawObject(result)), method, nil)
}

// ParkedSession is the record a parked call keeps in the store: a session
// of its own (the principal and vhost it belongs to), so the runtime's
// cross-instance machinery for 2025 sessions (pending requests, answers,
// the bus, leases) carries its rounds. Its ID is the park id.
func ParkedSession(id store.SessionID, principal, vhost string) *store.Session {
	return &store.Session{ID: id, Principal: principal, VHost: vhost, ProtocolVersion: wire.ModernProtocolVersion}
}
