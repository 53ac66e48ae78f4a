package router

import (
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A request whose store operation fails (the store is down, or slower than
// its timeout) is answered -32603 wire.MsgStoreUnavailable, and the
// transport answers it with HTTP 503 while it still can (StoreUnavailable):
// the request may succeed if retried, on this instance or another, once
// the store answers again. Failures of best-effort writes (a mark cleared,
// a snapshot refreshed, a notification published) are only logged.

// msgStoreUnavailable is the message of every such answer.
const msgStoreUnavailable = wire.MsgStoreUnavailable

// errStoreUnavailable wraps a store failure that must fail the request,
// from code that returns errors rather than responses.
var errStoreUnavailable = errors.New(msgStoreUnavailable)

// storeUnavailable answers request id after the store failed with err.
func (r *Router) storeUnavailable(id jsonrpc.ID, err error) *jsonrpc.Response {
	r.log.Error(wire.MsgStoreUnavailable, "error", err)
	return refuse(id, http.StatusServiceUnavailable, 0, rpcError(CodeInternalError, msgStoreUnavailable))
}

// StoreUnavailable reports whether resp answers a request that failed
// because the session store did not: the transport answers it with HTTP
// 503 (when it has not begun a stream already).
func StoreUnavailable(resp *jsonrpc.Response) bool {
	status, _, ok := Refusal(resp)
	return ok && status == http.StatusServiceUnavailable
}
