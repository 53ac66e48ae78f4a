package handler

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/handler/auth"

	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// writeRefusal answers a request the router refused with an HTTP status of
// its own (router.Refusal): 429 for a rate limit or a bound on what one
// principal may hold, with Retry-After in whole seconds (rounded up, at
// least 1); 400 for a request too large to serve; 403 with an
// insufficient_scope challenge for a name the token lacks the scopes for. The body is the
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
	if scopes := router.InsufficientScope(resp); scopes != nil {
		// Step-up (RFC 6750 §3.1, the MCP authorization spec): the client
		// asks for a token with these scopes and retries.
		ch := `Bearer error="insufficient_scope", ` + auth.ChallengeParam("scope", strings.Join(scopes, " "))
		if n := noteOf(w); n != nil && n.challenge != "" {
			ch += ", " + n.challenge
		}
		w.Header().Set("WWW-Authenticate", ch)
	}
	writeRPCError(w, status, rawID, e, wait)
	return true
}
