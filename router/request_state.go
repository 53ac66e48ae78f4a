package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/sealed"
)

// A multi-round-trip request (protocol 2026-07-28) answers input_required
// with an opaque requestState the client echoes on its retry. The gateway
// hands the client a request state of its own around the backend's, bound to
// the backend, the caller, the request and a lifetime (router/sealed);
// this file puts it on results and takes it off retries.

// stateKeyName names the request-state key in the store.
const stateKeyName = "request-state"

// binding is what a request state of c for t is bound to.
func binding(v *vhost, c *Call, t *target) sealed.Binding {
	return sealed.Binding{VHost: v.name, Principal: c.Principal, Method: c.Request.Method, Target: t.public}
}

// sealState seals st for b; an error wraps errStoreUnavailable when the key
// could not be read.
func (rc *routedCalls) sealState(ctx context.Context, b sealed.Binding, st sealed.RequestState) (string, error) {
	tok, err := rc.states.Seal(ctx, b, st)
	if errors.Is(err, sealed.ErrKeyUnavailable) {
		return "", fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
	return tok, err
}

// openState opens a client's request state for b: sealed.ErrBadRequestState
// for anything that does not check out, an error wrapping
// errStoreUnavailable when the key could not be read.
func (rc *routedCalls) openState(ctx context.Context, b sealed.Binding, token string) (*sealed.RequestState, error) {
	st, err := rc.states.Open(ctx, b, token)
	if errors.Is(err, sealed.ErrKeyUnavailable) {
		return nil, fmt.Errorf("%w: %w", errStoreUnavailable, err)
	}
	return st, err
}

// openRequestState replaces the gateway's request state in a modern
// retry's params with the backend's own, after checking it belongs to this
// caller, this request and the backend routing chose. It returns the
// answer to give instead (a refusal; or the task whose first question the
// retry answers), or nil.
func (rc *routedCalls) openRequestState(ctx context.Context, v *vhost, c *Call, t *target) *jsonrpc.Response {
	raw, ok := t.params["requestState"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var token string
	if json.Unmarshal(raw, &token) != nil {
		return errorResponse(c.Request.ID, invalidParams("requestState must be a string"))
	}
	st, err := rc.openState(ctx, binding(v, c, t), token)
	switch {
	case errors.Is(err, errStoreUnavailable):
		return rc.storeUnavailable(c.Request.ID, err)
	case err == nil && st.Task != "" && st.Backend == t.backend:
		return rc.tasks.answerTaskInput(ctx, v, c, t, st) // tasks_run.go: input_before_task
	case err == nil && st.Park != "":
		if resp := c.Caller.resumeParked(ctx, rc, v, c, t, st); resp != nil {
			return resp // parking_retry.go
		}
		fallthrough // a caller that parks nothing
	case err != nil, st.Park != "", st.Backend != t.backend:
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: it was not issued by this gateway for this request and caller, or it has expired"))
	}
	if st.State == "" {
		delete(t.params, "requestState")
	} else {
		t.params["requestState"], _ = json.Marshal(st.State)
	}
	return nil
}

// sealRequestState wraps the backend's state of an input_required result
// in the gateway's request state (also when the backend kept none: it
// still binds the retry to the backend, the caller and the request). asks
// is false for a complete result, which is returned as it is.
func (rc *routedCalls) sealRequestState(ctx context.Context, v *vhost, c *Call, t *target, result json.RawMessage) (_ json.RawMessage, asks bool, _ error) {
	if !bytes.Contains(result, []byte(`"inputRequests"`)) && !bytes.Contains(result, []byte(envelope.ResultInputRequired)) {
		return result, false, nil // most results: no decode
	}
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
	if head.ResultType != envelope.ResultInputRequired && !inBand {
		return result, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, true, err
	}
	if inBand {
		m["resultType"], _ = json.Marshal(envelope.ResultInputRequired)
	}
	var state string
	if len(head.RequestState) > 0 && string(head.RequestState) != "null" {
		if err := json.Unmarshal(head.RequestState, &state); err != nil {
			return nil, true, err
		}
	}
	token, err := rc.sealState(ctx, binding(v, c, t), sealed.RequestState{Backend: t.backend, State: state})
	if err != nil {
		return nil, true, err
	}
	m["requestState"], _ = json.Marshal(token)
	return wire.RawObject(m), true, nil
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
