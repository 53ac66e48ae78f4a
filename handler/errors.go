package handler

import (
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
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
	noteOf(w).setError(code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(wire.ErrorBody(rawID, code, msg))
}
