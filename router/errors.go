package router

import (
	"errors"
	"fmt"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes the router answers with, from the one table in
// internal/wire/codes.go.
const (
	CodeInvalidRequest   = wire.CodeInvalidRequest
	CodeMethodNotFound   = wire.CodeMethodNotFound
	CodeInvalidParams    = wire.CodeInvalidParams
	CodeInternalError    = wire.CodeInternalError
	CodeRequestCancelled = wire.CodeRequestCancelled
	CodeRateLimited      = wire.CodeRateLimited
	CodePolicyDenied     = wire.CodePolicyDenied
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
