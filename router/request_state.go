package router

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A multi-round-trip request (protocol 2026-07-28) answers input_required
// with an opaque requestState that the client echoes on its retry, which
// may reach any instance. The gateway never hands a client a backend's
// state as is: it wraps it in an envelope of its own, signed with a key
// every instance shares (sharedKey), that binds it to
//
//   - the backend that issued it, so the retry reaches that backend with
//     its own state, whatever routing would say;
//   - the caller (a digest of the principal), so another caller cannot
//     replay it;
//   - a lifetime, so an old state cannot be replayed forever;
//   - the request: a digest of the virtual host, the method and the
//     published name or URI, so a state cannot be moved to another call.
//
// A tampered, expired, foreign or misplaced envelope is refused (-32602)
// before any backend sees it.
//
// Wire form: base64url(JSON envelope) "." base64url(HMAC-SHA256(key, ...)).

// stateVersion is mixed into the MAC so that other signed tokens (cursors)
// can never be taken for a request state, nor the reverse.
const stateVersion = "mcpgw-request-state-v1"

// stateKeyName names the request-state key in the store.
const stateKeyName = "request-state"

// requestStateEnvelope is what a gateway request state carries.
type requestStateEnvelope struct {
	Backend   string `json:"b"`
	Principal string `json:"p"` // principalTag
	Expires   int64  `json:"e"` // Unix milliseconds
	Request   string `json:"r"` // requestDigest
	State     string `json:"s,omitempty"`
	// Park and Round name a call the gateway holds open on a 2025-era
	// backend that asked the client something (modern_park.go); State is
	// then empty: the backend has none.
	Park  store.SessionID `json:"k,omitempty"`
	Round int             `json:"n,omitempty"`
}

var errBadRequestState = errors.New("invalid requestState")

// requestDigest binds a state to one request: its vhost, method and target.
func requestDigest(vhost, method, target string) string {
	sum := sha256.Sum256([]byte(vhost + "\x00" + method + "\x00" + target))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// wrapRequestState returns the envelope the client is given for a
// backend's state (possibly "": the backend kept none).
func (r *Router) wrapRequestState(ctx context.Context, vhost, principal, method, target, backend, state string) (string, error) {
	return r.sealEnvelope(ctx, vhost, principal, method, target, requestStateEnvelope{Backend: backend, State: state})
}

// sealEnvelope signs env, bound to the caller, the request and a lifetime.
func (r *Router) sealEnvelope(ctx context.Context, vhost, principal, method, target string, env requestStateEnvelope) (string, error) {
	key, err := r.stateKeys.signingKey(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: request-state key: %w", errStoreUnavailable, err)
	}
	env.Principal = principalTag(principal)
	env.Expires = time.Now().Add(r.opts.RequestStateTTL).UnixMilli()
	env.Request = requestDigest(vhost, method, target)
	payload, err := json.Marshal(env)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, p)), nil
}

// unwrapRequestState checks a client's envelope and returns the backend it
// belongs to and that backend's own state. errBadRequestState for anything
// that does not check out; an error wrapping errStoreUnavailable when the
// key could not be read.
func (r *Router) unwrapRequestState(ctx context.Context, vhost, principal, method, target, token string) (backend, state string, err error) {
	env, err := r.openEnvelope(ctx, vhost, principal, method, target, token)
	if err != nil {
		return "", "", err
	}
	if env.Park != "" {
		return "", "", errBadRequestState // a parked call's state is handled before routing
	}
	return env.Backend, env.State, nil
}

// openEnvelope verifies a client's envelope and its bindings.
func (r *Router) openEnvelope(ctx context.Context, vhost, principal, method, target, token string) (*requestStateEnvelope, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return nil, errBadRequestState
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return nil, errBadRequestState
	}
	valid, err := r.stateKeys.verify(ctx, func(key []byte) bool { return hmac.Equal(got, stateMAC(key, p)) })
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: request-state key: %w", errStoreUnavailable, err)
	case !valid:
		return nil, errBadRequestState
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, errBadRequestState
	}
	var env requestStateEnvelope
	if json.Unmarshal(payload, &env) != nil || env.Backend == "" {
		return nil, errBadRequestState
	}
	switch {
	case env.Principal != principalTag(principal),
		env.Request != requestDigest(vhost, method, target),
		time.Now().UnixMilli() > env.Expires:
		return nil, errBadRequestState
	}
	return &env, nil
}

func stateMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateVersion))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// derivedSecret derives the secret of one kind of token from a configured
// one, so one configured secret signs cursors and request states without
// either being usable as the other.
func derivedSecret(secret []byte, name string) []byte {
	if len(secret) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mcpgw-derived-key\x00" + name))
	return m.Sum(nil)
}

// openRequestState replaces the envelope in a modern retry's params with
// the backend's own state, after checking the envelope belongs to this
// caller, this request and the backend routing chose. It returns the
// refusal to answer with, or nil.
func (r *Router) openRequestState(ctx context.Context, v *vhost, c *Call, t *target) *jsonrpc.Response {
	raw, ok := t.params["requestState"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var token string
	if json.Unmarshal(raw, &token) != nil {
		return errorResponse(c.Request.ID, invalidParams("requestState must be a string"))
	}
	backend, state, err := r.unwrapRequestState(ctx, v.name, c.Session.Principal, c.Request.Method, t.public, token)
	switch {
	case errors.Is(err, errStoreUnavailable):
		return r.storeUnavailable(c.Request.ID, err)
	case err != nil, backend != t.backend:
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: it was not issued by this gateway for this request and caller, or it has expired"))
	}
	if state == "" {
		delete(t.params, "requestState")
	} else {
		t.params["requestState"], _ = json.Marshal(state)
	}
	return nil
}

// sealRequestState wraps the backend's state of an input_required result
// in the gateway's envelope (also when the backend kept none: the envelope
// still binds the retry to the backend, the caller and the request). asks
// is false for a complete result, which is returned as it is.
func (r *Router) sealRequestState(ctx context.Context, v *vhost, c *Call, t *target, result json.RawMessage) (_ json.RawMessage, asks bool, _ error) {
	var head struct {
		ResultType    string          `json:"resultType"`
		RequestState  json.RawMessage `json:"requestState"`
		InputRequests json.RawMessage `json:"inputRequests"`
	}
	if json.Unmarshal(result, &head) != nil {
		return result, false, nil
	}
	// A 2025-era session's backend that knows multi-round trips may still
	// answer in-band, without a resultType (go-sdk's bridge does when its
	// re-invoked handler asks again): inputRequests alone says
	// input_required.
	inBand := head.ResultType == "" && len(head.InputRequests) > 0 && head.InputRequests[0] == '{'
	if head.ResultType != resultInputRequired && !inBand {
		return result, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, true, err
	}
	if inBand {
		m["resultType"], _ = json.Marshal(resultInputRequired)
	}
	var state string
	if len(head.RequestState) > 0 && string(head.RequestState) != "null" {
		if err := json.Unmarshal(head.RequestState, &state); err != nil {
			return nil, true, err
		}
	}
	token, err := r.wrapRequestState(ctx, v.name, c.Session.Principal, c.Request.Method, t.public, t.backend, state)
	if err != nil {
		return nil, true, err
	}
	m["requestState"], _ = json.Marshal(token)
	return rawObject(m), true, nil
}

// paramHeaders are the client's Mcp-Param-* headers: a tools/call's
// arguments mirrored by the tool's x-mcp-header annotations, whose names
// and values renaming never changes, so the backend gets them as sent
// (and checks them against the arguments, as the body's reader must).
func paramHeaders(h http.Header) http.Header {
	var out http.Header
	for k, vs := range h {
		if strings.HasPrefix(k, "Mcp-Param-") {
			if out == nil {
				out = http.Header{}
			}
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}
