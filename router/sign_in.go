package router

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A user_oauth backend reached by a user who has not signed in there
// (credentials.SignInRequired) answers with a URL-mode elicitation: the
// user opens the gateway's connect link in a browser, and the call is
// retried once connected.
//
//   - 2026-07-28 with the elicitation.url capability: input_required,
//     inputRequests {signInInputKey: elicitation/create {mode: url,
//     message, url}} and the gateway's sealed requestState. The retry
//     carries the client's answer under that key: accept retries the
//     call (asking again, with a new link, if the user has not finished),
//     decline or cancel ends it.
//   - 2025-11-25 with the capability: -32042 with data.elicitations.
//   - without it: 2026-07-28 -32021 naming the capability; older
//     sessions an error whose message carries the link.
//
// Lists are not asked for sign-in: such a backend is skipped for an
// unconnected user like any failing backend, named in the list's _meta.

// signInInputKey is the gateway's key among a retry's inputResponses.
const signInInputKey = "mcpgw-sign-in"

// codeURLElicitationRequired is 2025-11-25's URLElicitationRequiredError.
const codeURLElicitationRequired = -32042

// signInAnswer is the answer to a routed request whose backend needs the
// caller's sign-in, or nil when err is something else.
func (rc *routedCalls) signInAnswer(ctx context.Context, v *vhost, c *Call, t *target, err error) *jsonrpc.Response {
	var sr *credentials.SignInRequired
	if !errors.As(err, &sr) {
		return nil
	}
	return c.Caller.signIn(ctx, rc, v, c, t, sr, urlElicitation(c.peer.capabilities)) // caller_*.go
}

// signInRound is the answer for a client asked in rounds: an
// input_required round with a URL elicitation where the method has rounds,
// else an error saying what to do.
func (rc *routedCalls) signInRound(ctx context.Context, v *vhost, c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response {
	switch {
	case canURL && multiRoundTrip(c.Request.Method):
		params, _ := json.Marshal(map[string]string{"mode": "url", "message": sr.Message(), "url": sr.URL})
		result, _ := json.Marshal(map[string]any{
			"resultType": envelope.ResultInputRequired,
			"inputRequests": map[string]any{signInInputKey: map[string]any{
				"method": "elicitation/create", "params": json.RawMessage(params)}},
		})
		sealed, _, serr := rc.sealRequestState(ctx, v, c, t, result)
		if serr != nil {
			if errors.Is(serr, errStoreUnavailable) {
				return rc.storeUnavailable(c.Request.ID, serr)
			}
			return errorResponse(c.Request.ID, rpcError(CodeInternalError, "cannot seal the request state"))
		}
		return resultResponse(c.Request.ID, sealed)
	case canURL: // completion/complete, subscribe: no input_required there
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%s", sr.Error()))
	default:
		e := rpcError(wire.CodeMissingClientCapability, "backend %s needs you to sign in through a URL elicitation, which this client did not declare (capabilities.elicitation.url); open %s in a browser", wire.Quote(t.backend), sr.URL)
		e.Data, _ = json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}})
		return errorResponse(c.Request.ID, e)
	}
}

// signInError is the answer for a client asked on its stream (or through
// a task): URLElicitationRequired when it declared URL elicitation.
func signInError(c *Call, t *target, sr *credentials.SignInRequired, canURL bool) *jsonrpc.Response {
	if canURL {
		e := rpcError(codeURLElicitationRequired, "backend %s needs you to sign in: open the link", wire.Quote(t.backend))
		e.Data, _ = json.Marshal(map[string]any{"elicitations": []map[string]string{{
			"mode": "url", "elicitationId": sr.ID, "url": sr.URL, "message": sr.Message()}}})
		return errorResponse(c.Request.ID, e)
	}
	return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%s", sr.Error()))
}

// urlElicitation reports whether capabilities declare elicitation.url.
func urlElicitation(caps json.RawMessage) bool {
	var c struct {
		Elicitation *struct {
			URL json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	return json.Unmarshal(caps, &c) == nil && c.Elicitation != nil && len(c.Elicitation.URL) > 0 && string(c.Elicitation.URL) != "null"
}

// takeSignInAnswer removes the client's answer to a sign-in elicitation
// from a modern retry's inputResponses: accept lets the call go on (it
// asks again if the user has not finished), decline and cancel end it.
func takeSignInAnswer(c *Call, t *target) *jsonrpc.Response {
	raw, ok := t.params["inputResponses"]
	if !ok {
		return nil
	}
	var responses map[string]json.RawMessage
	if json.Unmarshal(raw, &responses) != nil {
		return nil
	}
	ans, ok := responses[signInInputKey]
	if !ok {
		return nil
	}
	delete(responses, signInInputKey)
	if len(responses) == 0 {
		delete(t.params, "inputResponses")
	} else {
		t.params["inputResponses"], _ = json.Marshal(responses)
	}
	var a struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(ans, &a)
	switch a.Action {
	case "accept":
		return nil
	case "decline", "cancel":
		return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "sign-in to backend %s was %s: the call needs it", wire.Quote(t.backend), map[string]string{"decline": "declined", "cancel": "cancelled"}[a.Action]))
	default:
		return errorResponse(c.Request.ID, invalidParams("inputResponses[%q] must be an elicitation result with an action", signInInputKey))
	}
}

// signInFirst asks a user_oauth backend's token source before anything
// else: the backend's discovery (which needs the user's token too) would
// otherwise fail first and hide the sign-in behind a recorded failure. A
// user who has signed in since the session recorded such a failure gets
// the backend probed again at once: the call goes on as the one returned,
// a copy of c with that peer (c itself, and its peer, which may be shared,
// are not changed).
func (rc *routedCalls) signInFirst(ctx context.Context, v *vhost, c *Call, t *target) (*Call, *jsonrpc.Response) {
	b := v.backends[t.backend]
	if b == nil || b.Credentials == nil || b.Credentials.Grant != credentials.GrantUserOAuth {
		return c, nil
	}
	if err := v.clients[t.backend].Authorize(ctx); err != nil {
		return c, rc.signInAnswer(ctx, v, c, t, err) // nil for other failures: the call reports them
	}
	if snap := c.peer.backends[t.backend]; snap != nil && !snap.OK() {
		again := *snap
		again.ProbedAt = time.Time{} // due now (backend_session.go: reprobeDue)
		reprobed := *c
		reprobed.peer = c.peer.withSnapshot(t.backend, &again)
		return &reprobed, nil
	}
	return c, nil
}

// MetaSignInRequired is the list result _meta key naming the user_oauth
// backends the caller has not signed in to, each with a connect link and
// a message: the backend's items are missing from the list (it cannot be
// asked without the user's token) until the user opens the link, so a
// client can show it and a person can start the sign-in from the list.
const MetaSignInRequired = federated.MetaSignInRequired

// signInNeeded reports a user_oauth backend the caller has no usable
// token for, nil otherwise (another backend, a token, or another failure,
// which the list reports as it reports any).
func (lk *backendLink) signInNeeded(ctx context.Context, v *vhost, key string) *credentials.SignInRequired {
	b := v.backends[key]
	if b == nil || b.Credentials == nil || b.Credentials.Grant != credentials.GrantUserOAuth {
		return nil
	}
	var sr *credentials.SignInRequired
	if err := v.clients[key].Authorize(ctx); errors.As(err, &sr) {
		return sr
	}
	return nil
}
