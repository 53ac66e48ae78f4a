package handler

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// writeRefusal answers a request the router refused with an HTTP status of
// its own (router.Refusal): 429 for a rate limit or a bound on what one
// principal may hold, with Retry-After in whole seconds (rounded up, at
// least 1); 400 for a request too large to serve. The body is the
// router's JSON-RPC error naming the limit. It reports false, writing
// nothing, for any other response.
func writeRefusal(w http.ResponseWriter, resp *jsonrpc.Response, rawID json.RawMessage) bool {
	status, wait, ok := router.Refusal(resp)
	if !ok {
		return false
	}
	var e *jsonrpc.Error
	if !errors.As(resp.Error, &e) {
		return false
	}
	writeRPCError(w, status, rawID, e, wait)
	return true
}
