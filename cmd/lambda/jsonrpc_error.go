package main

import (
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/router/wire"
)

// JSON-RPC error codes used by this package's own answers, from the table
// the handler's answers use (router/wire/codes.go).
const (
	codeInvalidRequest = wire.CodeInvalidRequest
	codeInternalError  = wire.CodeInternalError
)

// writeJSONRPCError answers with an HTTP status and a JSON-RPC error body
// (id null), the shape of the handler's own transport-level errors, which
// every MCP client can display.
func writeJSONRPCError(w http.ResponseWriter, status, code int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
