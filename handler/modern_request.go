package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Protocol revision 2026-07-28 has no session: every request says who its
// client is in params._meta and mirrors its method and target in headers.
// The gateway serves it beside the session protocol on the same endpoint;
// this file tells the two apart and checks a modern request's _meta and
// headers before anything else sees it, with the revision's error codes.

// Keys of a modern request's params._meta.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// Headers of the 2026-07-28 transport.
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// modernHTTPError is a refused modern request: an HTTP status and the
// JSON-RPC error it answers with.
type modernHTTPError struct {
	status int
	err    *jsonrpc.Error
}

func modernRefusal(status int, code int64, format string, args ...any) *modernHTTPError {
	return &modernHTTPError{status: status, err: &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// requestMeta is the part of params._meta the transport looks at. A
// request's params are decoded for it once (paramsMeta): a page's params
// carry the cursor, which every decode scans again.
type requestMeta struct {
	ProtocolVersion    *string         `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
	LogLevel           *string         `json:"io.modelcontextprotocol/logLevel"`
	ProgressToken      json.RawMessage `json:"progressToken"`
}

// hasProgressToken reports whether the request asked for progress.
func (m *requestMeta) hasProgressToken() bool {
	return len(m.ProgressToken) > 0 && string(m.ProgressToken) != "null"
}

// paramsMeta decodes params._meta; ok is false when params or _meta is
// not an object. A request without params has an empty _meta.
func paramsMeta(params json.RawMessage) (m requestMeta, ok bool) {
	if len(params) == 0 || string(params) == "null" {
		return m, true
	}
	// The message was decoded as JSON already: only _meta is read.
	var meta []byte
	if !wire.MembersBytes(params, func(k, v []byte) bool {
		if string(k) == "_meta" {
			meta = v
		}
		return true
	}) {
		return m, false
	}
	if len(meta) == 0 || string(meta) == "null" {
		return m, true
	}
	if meta[0] != '{' {
		return m, false
	}
	if decodeRequestMeta(meta, &m) {
		return m, true
	}
	m = requestMeta{}
	if json.Unmarshal(meta, &m) != nil {
		return m, false
	}
	return m, true
}

// decodeRequestMeta reads _meta's members where they lie, as
// encoding/json reads them into requestMeta (the last of a key wins; a
// null pointer member is nil, a null raw member is "null"): every modern
// request's _meta is read, and encoding/json's reflection was 2% of a
// relayed call. false, for encoding/json to settle, when a member has
// the wrong type or a key matches one of requestMeta's only without case.
func decodeRequestMeta(meta []byte, m *requestMeta) bool {
	ok := true
	str := func(v []byte) *string {
		if string(v) == "null" {
			return nil
		}
		s, good := wire.String(v)
		ok = ok && good
		return &s
	}
	walked := wire.MembersBytes(meta, func(k, v []byte) bool {
		switch string(k) {
		case metaProtocolVersion:
			m.ProtocolVersion = str(v)
		case metaLogLevel:
			m.LogLevel = str(v)
		case metaClientCapabilities:
			m.ClientCapabilities = v
		case metaClientInfo:
			m.ClientInfo = v
		case "progressToken":
			m.ProgressToken = v
		default:
			for _, key := range [...]string{metaProtocolVersion, metaLogLevel, metaClientCapabilities, metaClientInfo, "progressToken"} {
				if bytes.EqualFold(k, []byte(key)) {
					ok = false // encoding/json matches keys without case
				}
			}
		}
		return ok
	})
	return walked && ok
}

// isModern reports whether a POSTed request belongs to the sessionless
// generation: its _meta names a protocol version, or an
// MCP-Protocol-Version header names one the gateway does not know as a
// session version and that sorts at or after 2026-07-28 (the revision
// compares versions as text, so "v999.0.0" is a modern version too, an
// unsupported one). Every value of the header counts: a request that
// repeats it is refused in the revision's terms if any of them is modern.
// meta and metaOK are paramsMeta's answer for the request.
func isModern(meta requestMeta, metaOK bool, pvHeaders []string) bool {
	if metaOK && meta.ProtocolVersion != nil {
		return true
	}
	return modernHeaderVersion(pvHeaders)
}

// modernHeaderVersion reports whether any of a request's
// MCP-Protocol-Version values names a sessionless revision.
func modernHeaderVersion(pvHeaders []string) bool {
	for _, v := range pvHeaders {
		if wire.IsModernVersion(v) {
			return true
		}
	}
	return false
}

// checkModern validates a modern request's version, _meta and headers, in
// the revision's order: a repeated transport header (-32020), header
// against body (-32020), version (-32022), _meta (-32602), then the
// mirrored method and name (-32020), and the method itself (404 -32601).
// meta and ok are paramsMeta's answer for req.
func checkModern(req *jsonrpc.Request, h http.Header, meta requestMeta, ok bool) *modernHTTPError {
	if name := repeatedModernHeader(h); name != "" {
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch, "more than one %s header", name)
	}
	pv := h.Get(headerProtocolVersion)
	if !ok {
		return modernRefusal(http.StatusBadRequest, wire.CodeInvalidParams, "params._meta must be an object")
	}
	switch {
	case meta.ProtocolVersion != nil && pv == "":
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch,
			"the MCP-Protocol-Version header is required for requests carrying %q", metaProtocolVersion)
	case meta.ProtocolVersion != nil && *meta.ProtocolVersion != pv:
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch,
			"header mismatch: MCP-Protocol-Version header %s does not match %s %s", wire.Quote(pv), metaProtocolVersion, wire.Quote(*meta.ProtocolVersion))
	case pv != wire.ModernProtocolVersion:
		return unsupportedVersion(pv)
	case meta.ProtocolVersion == nil:
		return modernRefusal(http.StatusBadRequest, wire.CodeInvalidParams, "params._meta needs %q", metaProtocolVersion)
	case len(meta.ClientCapabilities) == 0 || meta.ClientCapabilities[0] != '{':
		return modernRefusal(http.StatusBadRequest, wire.CodeInvalidParams, "params._meta needs %q, an object", metaClientCapabilities)
	case len(meta.ClientInfo) > 0 && meta.ClientInfo[0] != '{':
		return modernRefusal(http.StatusBadRequest, wire.CodeInvalidParams, "params._meta %q must be an object", metaClientInfo)
	case meta.LogLevel != nil && !wire.ValidLogLevel(*meta.LogLevel):
		return modernRefusal(http.StatusBadRequest, wire.CodeInvalidParams, "params._meta %q: unknown log level %s", metaLogLevel, wire.Quote(*meta.LogLevel))
	}
	if got := h.Get(headerMethod); got != req.Method {
		if got == "" {
			return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch, "missing required %s header", headerMethod)
		}
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch,
			"header mismatch: %s header %s does not match the body's method %s", headerMethod, wire.Quote(got), wire.Quote(req.Method))
	}
	if !wire.MethodOf(req.Method).Modern {
		return modernRefusal(http.StatusNotFound, wire.CodeMethodNotFound, "method %s is not part of protocol %s", wire.Quote(req.Method), wire.ModernProtocolVersion)
	}
	if field := wire.MethodOf(req.Method).NameField; field != "" {
		if err := checkNameHeader(req, field, h); err != nil {
			return err
		}
	}
	return nil
}

// checkNameHeader checks Mcp-Name against the body's name or URI, after
// decoding the header's Base64 sentinel form.
func checkNameHeader(req *jsonrpc.Request, field string, h http.Header) *modernHTTPError {
	value, ok := wire.MemberValue(req.Params, field)
	body, isString := wire.String(value)
	if !ok || !isString {
		return nil // the router answers a missing name with -32602
	}
	raw := h.Get(headerName)
	if raw == "" && len(h.Values(headerName)) == 0 {
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch, "missing required %s header for %s", headerName, req.Method)
	}
	got, ok := wire.DecodeHeaderValue(raw)
	switch {
	case !ok:
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch, "%s header: malformed Base64 value", headerName)
	case got != body:
		return modernRefusal(http.StatusBadRequest, wire.CodeHeaderMismatch,
			"header mismatch: %s header %s does not match params.%s %s", headerName, wire.Quote(got), field, wire.Quote(body))
	}
	return nil
}

// unsupportedVersion answers a protocol version the gateway does not
// speak: -32022 with the versions it does, for either generation.
func unsupportedVersion(requested string) *modernHTTPError {
	data, _ := json.Marshal(map[string]any{"supported": wire.AllProtocolVersions(), "requested": wire.Clip(requested)})
	return &modernHTTPError{status: http.StatusBadRequest, err: &jsonrpc.Error{
		Code: wire.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version " + wire.Quote(requested), Data: data}}
}
