package router

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Most errors travel as a JSON-RPC error in an HTTP 200 answer (or with
// the status the transport picks for the code). A few refusals need a
// status of their own, decided before any answer begins: a client over a
// rate limit or another bound gets 429 with Retry-After, so well-behaved
// clients back off; a request too large to serve gets 400; a request the
// session store failed gets 503 (store_unavailable.go). The router marks
// such a response in its Extra (which never reaches the wire) and the
// transport writes the status: one mark, one writer (handler/refusal.go).

// refusal is the mark: the HTTP status, and how long the client should
// wait before it tries again (0: no Retry-After).
type refusal struct {
	status     int
	retryAfter time.Duration
}

// Refusal reports the HTTP status resp must be answered with, and the
// Retry-After it carries (0: none); ok is false for an ordinary answer.
func Refusal(resp *jsonrpc.Response) (status int, retryAfter time.Duration, ok bool) {
	rf, ok := resp.Extra.(refusal)
	return rf.status, rf.retryAfter, ok
}

// RateLimited reports whether resp refuses a request over a rate limit or
// another bound answered with 429, and after how long the client may retry
// (the Retry-After header, in whole seconds, rounded up).
func RateLimited(resp *jsonrpc.Response) (retryAfter time.Duration, ok bool) {
	status, wait, ok := Refusal(resp)
	return wait, ok && status == http.StatusTooManyRequests
}

// refuse answers request id with e and the HTTP status that goes with it.
func refuse(id jsonrpc.ID, status int, retryAfter time.Duration, e *jsonrpc.Error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Extra: refusal{status: status, retryAfter: retryAfter}, Error: e}
}
