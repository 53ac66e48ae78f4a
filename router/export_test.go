package router

// Readings of a Refusal the tests assert on, kept here since only tests
// ask these questions (the transport asks Refusal).

import (
	"context"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/router/sealed"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// RateLimited reports whether resp refuses a request over a rate limit or
// another bound answered with 429, and after how long the client may retry.
func RateLimited(resp *jsonrpc.Response) (retryAfter time.Duration, ok bool) {
	status, wait, ok := Refusal(resp)
	return wait, ok && status == http.StatusTooManyRequests
}

// StoreUnavailable reports whether resp answers a request that failed
// because the session store did: the transport answers it with HTTP 503.
func StoreUnavailable(resp *jsonrpc.Response) bool {
	status, _, ok := Refusal(resp)
	return ok && status == http.StatusServiceUnavailable
}

// SealSignInState seals the requestState a sign-in round hands a client
// (request_state.go: the backend kept none, nothing parked), for a test of
// its retry.
func SealSignInState(ctx context.Context, r *Router, vhost, principal, method, public, backend string) (string, error) {
	return r.calls.sealState(ctx, sealed.Binding{VHost: vhost, Principal: principal, Method: method, Target: public},
		sealed.RequestState{Backend: backend})
}

// SignInInputKey is the inputResponses key of a sign-in round's answer.
const SignInInputKey = signInInputKey
