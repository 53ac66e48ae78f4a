package handler

import (
	"encoding/json"
	"net/http"

	"github.com/mcpgw/gateway/router/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The codes come from the one table in router/wire/codes.go.
const (
	codeParseError      = wire.CodeParseError
	codeInvalidRequest  = wire.CodeInvalidRequest
	codeInternalError   = wire.CodeInternalError
	codeSessionNotFound = wire.CodeSessionNotFound
)

// writeHTTPError answers a transport-level failure: an HTTP status with a
// JSON-RPC error body (id null), which every MCP client can display.
func writeHTTPError(w http.ResponseWriter, status int, code int64, msg string) {
	writeHTTPErrorID(w, status, jsonrpc.ID{}, code, msg)
}

func writeHTTPErrorID(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, msg string) {
	body, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
	if !id.IsValid() {
		// EncodeMessage omits a null id; JSON-RPC wants it present.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) == nil {
			m["id"] = json.RawMessage("null")
			body, _ = json.Marshal(m)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
