package wire

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes the gateway answers with. This is the one table:
// the router's answers (router/failures.go aliases these), the session
// runtime's, the upstream client's automatic replies to backends, and the
// transport-level answers (an HTTP status with an ErrorBodyOf) that the
// handler, handler/auth's 401 and cmd/lambda's adapters write. A backend's
// own error passes through with its own code and is not in this table.
const (
	CodeParseError     = jsonrpc.CodeParseError     // -32700, with 400: the body is not JSON
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest // -32600, with 400, 403, 405, 406, 408, 413, 415
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound // -32601: a method the gateway does not serve or forward
	CodeInvalidParams  = jsonrpc.CodeInvalidParams  // -32602: unknown or hidden identifiers, bad cursors, bad params
	CodeInternalError  = jsonrpc.CodeInternalError  // -32603, with 500, 503; and an unreachable or timed-out backend

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
	// CodeInsufficientScope answers HTTP 403 with an insufficient_scope
	// challenge: an access rule shows the name only to a token that
	// grants more scopes (step-up authorization, RFC 6750 §3.1).
	CodeInsufficientScope = -32011

	// Protocol 2026-07-28's own codes, each answered with HTTP 400.
	//
	// CodeHeaderMismatch: a header the transport requires (MCP-Protocol-
	// Version, Mcp-Method, Mcp-Name, Mcp-Param-*) is missing, malformed or
	// does not match the body.
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request needs a client capability
	// its _meta does not declare (data.requiredCapabilities).
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: a protocol version the gateway does
	// not speak (data: {supported, requested}).
	CodeUnsupportedProtocolVersion = -32022

	// Policy (per-vhost plugins and rate limits), in the same
	// implementation-defined range and clear of the codes above.
	//
	// CodeRateLimited: a rate limit of the virtual host refused the
	// request before any backend saw it; HTTP 429 with Retry-After where
	// the answer is not yet a stream, data {limit, retryAfterMs}.
	CodeRateLimited = -32029
	// CodePolicyDenied: a plugin refused the request or its result
	// (deny_pattern, max_result_bytes), data {plugin, rule}. Arguments
	// that fail validate_arguments get -32602 instead: they are invalid
	// params, the code a client already handles.
	CodePolicyDenied = -32030

	// CodeRequestCancelled answers a request the client cancelled, for
	// transports that need some answer to close the HTTP exchange (the
	// client has stopped waiting for it).
	CodeRequestCancelled = -32800
)

// ModernStatus is the HTTP status protocol 2026-07-28 answers a JSON-RPC
// error of code with, its errors table: 404 for a method the server does
// not have, 400 for the revision's own codes (a header, a client
// capability, a version), 200 for any other: a call's own failure (a
// tool that failed, a resource not found) is an answer like a result.
// It is a fact of the revision's wire, whoever made the error (the
// gateway, or a backend whose error passes through), so it is said here,
// once; the router's 2026-07-28 client applies it (router/caller_modern.go)
// unless the router gave the refusal a status of its own (router.Failure:
// 429, 403, 503). A 2025 session's errors have no such table: there a
// 404 means the session is gone.
func ModernStatus(code int64) int {
	switch code {
	case CodeMethodNotFound:
		return http.StatusNotFound
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// MsgStoreUnavailable is the message of every answer to a request the
// session store failed (HTTP 503 or -32603), one spelling everywhere.
const MsgStoreUnavailable = "session store unavailable"
