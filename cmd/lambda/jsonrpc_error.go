package main

import (
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes used by this package's own answers, from the table
// the handler's answers use (internal/wire/codes.go).
const (
	codeInvalidRequest = wire.CodeInvalidRequest
	codeMethodNotFound = wire.CodeMethodNotFound
	codeInternalError  = wire.CodeInternalError
)

// writeJSONRPCError answers with an HTTP status and a JSON-RPC error body
// (id null), written by the same wire.ErrorBodyOf as the handler's own
// transport-level errors, which every MCP client can display.
func writeJSONRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	writeJSONRPCErrorFor(w, nil, status, code, msg)
}

// writeJSONRPCErrorFor is writeJSONRPCError for the request whose id is
// rawID (JSON; nil: null).
func writeJSONRPCErrorFor(w http.ResponseWriter, rawID json.RawMessage, status int, code int64, msg string) {
	wire.WriteError(w, status, rawID, &jsonrpc.Error{Code: code, Message: msg}, 0)
}
