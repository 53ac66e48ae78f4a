package handler

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The codes come from the one table in internal/wire/codes.go.
const (
	codeParseError      = wire.CodeParseError
	codeInvalidRequest  = wire.CodeInvalidRequest
	codeInternalError   = wire.CodeInternalError
	codeSessionNotFound = wire.CodeSessionNotFound
)

// writeHTTPError answers a transport-level failure: an HTTP status with a
// JSON-RPC error body (id null), which every MCP client can display.
func writeHTTPError(w http.ResponseWriter, status int, code int64, msg string) {
	writeHTTPErrorRaw(w, status, nil, code, msg)
}

// writeHTTPErrorRaw is writeHTTPError for a request whose id is known:
// rawID, as the client wrote it (nil: null).
func writeHTTPErrorRaw(w http.ResponseWriter, status int, rawID json.RawMessage, code int64, msg string) {
	writeRPCError(w, status, rawID, &jsonrpc.Error{Code: code, Message: msg}, 0)
}

// writeRPCError answers with an HTTP status and a JSON-RPC error (its data
// included) for the request whose id is rawID, noting the code for the
// request log and audit trail, with Retry-After when retryAfter > 0.
func writeRPCError(w http.ResponseWriter, status int, rawID json.RawMessage, e *jsonrpc.Error, retryAfter time.Duration) {
	noteOf(w).setErrorWithData(e.Code, e.Data)
	wire.WriteError(w, status, rawID, e, retryAfter)
}
