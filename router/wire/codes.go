package wire

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// JSON-RPC error codes of the gateway's transport-level answers: an HTTP
// status with a JSON-RPC error body (id null). This is the one table the
// three writers of such answers share: handler/errors.go, the 401 of
// handler/auth, and cmd/lambda's adapters.
const (
	CodeParseError     = jsonrpc.CodeParseError     // -32700, with 400: the body is not JSON
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest // -32600, with 400, 403, 405, 406, 408, 413, 415
	CodeInternalError  = jsonrpc.CodeInternalError  // -32603, with 500, 503

	// CodeSessionNotFound answers HTTP 404 for an unknown, expired or
	// foreign Mcp-Session-Id: the code MCP SDKs send and recognise there.
	CodeSessionNotFound = -32001

	// CodeUnauthorized answers HTTP 401 (no bearer token, or a bad one).
	// It used to share -32001 with a missing session, though a client must
	// react to the two differently (get a token; start a new session). It
	// sits in JSON-RPC's implementation-defined server-error range
	// (-32000..-32099) and clear of the codes MCP SDKs and the spec give
	// meaning to: -32000 (the TypeScript SDK's generic transport error),
	// -32001, -32002 (resource not found), -32003..-32005 (the Go SDK's
	// connection errors), -32020..-32022 (2026-07-28 header, capability and
	// version errors) and -32042 (URL elicitation required).
	CodeUnauthorized = -32010
)
