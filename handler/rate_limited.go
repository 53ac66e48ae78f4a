package handler

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// writeRateLimited answers a request a rate limit refused (the router's
// Admit) with HTTP 429, Retry-After in whole seconds (rounded up, at least
// 1) and the router's JSON-RPC error naming the limit. It reports false,
// writing nothing, for any other response.
func writeRateLimited(w http.ResponseWriter, resp *jsonrpc.Response, rawID json.RawMessage) bool {
	wait, ok := router.RateLimited(resp)
	if !ok {
		return false
	}
	e, _ := resp.Error.(*jsonrpc.Error)
	if e == nil {
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10))
	writeRPCError(w, http.StatusTooManyRequests, rawID, e)
	return true
}
