package router

// How the router fails a request, in one place: the JSON-RPC error codes
// it answers with, the errors it builds, the HTTP status a few refusals
// need (429 with Retry-After, 400, 503) and how a store failure is told.
// The transport turns them into bytes with one writer (wire.WriteError).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes the router answers with, from the one table in
// internal/wire/codes.go.
const (
	CodeInvalidRequest    = wire.CodeInvalidRequest
	CodeMethodNotFound    = wire.CodeMethodNotFound
	CodeInvalidParams     = wire.CodeInvalidParams
	CodeInternalError     = wire.CodeInternalError
	CodeRequestCancelled  = wire.CodeRequestCancelled
	CodeRateLimited       = wire.CodeRateLimited
	CodePolicyDenied      = wire.CodePolicyDenied
	CodeInsufficientScope = wire.CodeInsufficientScope
)

// rpcError builds a JSON-RPC error object.
func rpcError(code int64, format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return rpcError(CodeInvalidParams, format, args...)
}

// backendError maps a transport-level failure to -32603 naming the backend.
// upstream.Error's message already names the backend and carries no secrets.
func backendError(key string, err error) *jsonrpc.Error {
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return rpcError(CodeInternalError, "%s", ue.Error())
	}
	var rf *recentFailure
	if errors.As(err, &rf) {
		return rpcError(CodeInternalError, "%s", rf.Error())
	}
	return rpcError(CodeInternalError, "backend %q: %v", key, err)
}

// Most errors travel as a JSON-RPC error in an HTTP 200 answer (or with
// the status the transport picks for the code). A few refusals need a
// status of their own, decided before any answer begins: a client over a
// rate limit or another bound gets 429 with Retry-After, so well-behaved
// clients back off; a request too large to serve gets 400; a request the
// session store failed gets 503. The router answers those with a typed
// Failure as the response's error, and the transport writes the status:
// one type, one writer (wire.WriteError).

// Failure is a refusal with an HTTP status of its own: the JSON-RPC error
// the client reads, the status the transport answers with (while no
// stream has begun), and how long the client should wait before it
// tries again (0: no Retry-After). It is a Response's Error; it encodes
// as its JSON-RPC error wherever it goes (wire.EncodeResponse), and
// errors.As finds that error in it.
type Failure struct {
	RPC        *jsonrpc.Error
	Status     int
	RetryAfter time.Duration
	// Scopes, with Status 403, are the scopes the caller's token lacks
	// (step-up authorization): the transport names them in an
	// insufficient_scope challenge.
	Scopes []string
}

// InsufficientScope reports the scopes a 403 refusal names (nil for any
// other answer).
func InsufficientScope(resp *jsonrpc.Response) []string {
	var f *Failure
	if resp == nil || !errors.As(resp.Error, &f) {
		return nil
	}
	return f.Scopes
}

func (f *Failure) Error() string { return f.RPC.Error() }

// Unwrap is the JSON-RPC error.
func (f *Failure) Unwrap() error { return f.RPC }

// MarshalJSON is the JSON-RPC error's.
func (f *Failure) MarshalJSON() ([]byte, error) { return json.Marshal(f.RPC) }

// Refusal reports the HTTP status resp must be answered with, and the
// Retry-After it carries (0: none); ok is false for an ordinary answer.
func Refusal(resp *jsonrpc.Response) (status int, retryAfter time.Duration, ok bool) {
	var f *Failure
	if resp == nil || !errors.As(resp.Error, &f) {
		return 0, 0, false
	}
	return f.Status, f.RetryAfter, true
}

// refuse answers request id with e and the HTTP status that goes with it.
func refuse(id jsonrpc.ID, status int, retryAfter time.Duration, e *jsonrpc.Error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &Failure{RPC: e, Status: status, RetryAfter: retryAfter}}
}

// A request whose store operation fails (the store is down, or slower than
// its timeout) is answered -32603 wire.MsgStoreUnavailable, and the
// transport answers it with HTTP 503 while it still can (Refusal):
// the request may succeed if retried, on this instance or another, once
// the store answers again. Failures of best-effort writes (a mark cleared,
// a snapshot refreshed, a notification published) are only logged.

// msgStoreUnavailable is the message of every such answer.
const msgStoreUnavailable = wire.MsgStoreUnavailable

// errStoreUnavailable wraps a store failure that must fail the request,
// from code that returns errors rather than responses.
var errStoreUnavailable = errors.New(msgStoreUnavailable)

// storeUnavailable answers request id after the store failed with err.
func (b *base) storeUnavailable(id jsonrpc.ID, err error) *jsonrpc.Response {
	b.log.Error(wire.MsgStoreUnavailable, "error", err)
	return refuse(id, http.StatusServiceUnavailable, 0, rpcError(CodeInternalError, msgStoreUnavailable))
}

// paramsError turns a failure to decode a request's params into -32602
// that says which member is wrong and what was expected, in JSON terms
// ("tools/list: params.cursor must be a string"), never encoding/json's
// own text, which spells out Go types ("cannot unmarshal number into Go
// struct field .cursor of type string").
func paramsError(method string, err error) *jsonrpc.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && len(te.Field) <= 64 {
		return invalidParams("%s: params.%s must be %s", method, te.Field, jsonKind(te.Type))
	}
	return invalidParams("%s: params must be an object", method)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}
