package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend that speaks protocol 2026-07-28 has no session and no
// handshake: every request stands alone, with the client's description in
// params._meta and its method and target mirrored in headers. A Conn opened
// with that version (SkipInitialize) is such a connection: each request is
// one POST, its _meta completed from the Handshake (keys the caller already
// set are kept, the protocol version is the connection's), its headers
// (Mcp-Method, Mcp-Name) built from the request the backend gets, after
// renaming, plus any the call adds (CallOptions.Headers: Mcp-Param-*). A
// cancelled request is cancelled by closing its HTTP exchange; nothing
// else is sent.

const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// modernMeta is the _meta every request of a modern connection carries
// unless the caller's params already say: the version, and the client's
// capabilities, identity and log level.
func modernMeta(h Handshake) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	m[metaProtocolVersion], _ = json.Marshal(h.ProtocolVersion)
	caps := h.ClientCapabilities
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	m[metaClientCapabilities] = caps
	if len(h.ClientInfo) > 0 {
		m[metaClientInfo] = h.ClientInfo
	}
	if h.LogLevel != "" {
		m[metaLogLevel], _ = json.Marshal(h.LogLevel)
	}
	return m
}

// withMeta completes params._meta with base (the version always the
// connection's) and sets the keys of override (the exchange's trace
// context, which replaces the client's: the backend's parent is the
// gateway's span). Params that are not an object are left alone: the
// backend answers them.
func withMeta(params json.RawMessage, base, override map[string]json.RawMessage) json.RawMessage {
	p, ok := wire.Object(params) // params the gateway checked or built: read where they lie
	if !ok {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, has := p["_meta"]; has {
		if meta, ok = wire.Object(raw); !ok {
			return params
		}
	}
	for k, v := range base {
		if _, set := meta[k]; !set || k == metaProtocolVersion {
			meta[k] = v
		}
	}
	if override != nil {
		delete(meta, metaTracestate) // the client's state goes with its parent
	}
	for k, v := range override {
		meta[k] = v
	}
	p["_meta"] = wire.RawObject(meta)
	return wire.RawObject(p)
}

// withoutModernMeta drops the 2026-07-28 keys (the protocol version and
// the client's description) from a request to a session backend: they say
// what the session's initialize said already, and a backend that knows the
// revision takes a request carrying them for a 2026-07-28 one (a stateful
// go-sdk server refuses it, -32022). Other _meta keys (progressToken,
// trace context) pass; trace keys the client set are replaced by trace's
// (the exchange's span, when traced), never added: a 2025-era backend
// gets its trace context in headers.
func withoutModernMeta(params json.RawMessage, trace map[string]json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"io.modelcontextprotocol/`)) &&
		(trace == nil || !bytes.Contains(params, []byte(`"traceparent"`))) {
		return params // the common case costs one scan
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta == nil {
		return params
	}
	for _, k := range []string{metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaLogLevel} {
		delete(meta, k)
	}
	if _, set := meta[metaTraceparent]; set && trace != nil {
		delete(meta, metaTracestate) // the client's state goes with its parent
		for k, v := range trace {
			meta[k] = v
		}
	}
	if len(meta) == 0 {
		delete(p, "_meta")
	} else {
		p["_meta"] = wire.RawObject(meta)
	}
	return wire.RawObject(p)
}

// setModernHeaders mirrors a request's method and target in its headers,
// and adds extra, the call's own (CallOptions.Headers).
func setModernHeaders(h http.Header, msg jsonrpc.Message, extra http.Header) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	h.Set(headerMethod, req.Method)
	if field := nameField(req.Method); field != "" {
		if raw, ok := wire.MemberValue(req.Params, field); ok {
			if name, ok := wire.String(raw); ok {
				h.Set(headerName, wire.EncodeHeaderValue(name))
			}
		}
	}
	for k, vs := range extra {
		h[k] = append([]string(nil), vs...)
	}
}

// nameField is the params field Mcp-Name mirrors for method, or "".
func nameField(method string) string { return wire.MethodOf(method).NameField }

// DiscoverResult is what a backend's server/discover said.
type DiscoverResult struct {
	SupportedVersions []string        `json:"supportedVersions"`
	Capabilities      json.RawMessage `json:"capabilities"`
	Instructions      string          `json:"instructions"`
	TTLMs             int64           `json:"ttlMs"`
	// ServerInfo is the backend's _meta serverInfo (nil when absent).
	ServerInfo json.RawMessage `json:"-"`
	// Raw is the result, verbatim.
	Raw json.RawMessage `json:"-"`
}

// ErrNotModern is returned by Discover for a backend whose answer does not
// show a 2026-07-28 server: an error or a result that is not a discover
// result. The backend may still speak the session protocol.
var ErrNotModern = errors.New("not a 2026-07-28 server")

// Discover asks the backend which protocol versions it speaks, as a
// 2026-07-28 client would (server/discover on a connection of its own):
// a result lists them; any error, whatever its form, is ErrNotModern
// wrapped in an *Error (a legacy server answers 400, 404 or 405, or a
// JSON-RPC error; a stateful go-sdk server -32022).
func (c *Client) Discover(ctx context.Context, clientInfo json.RawMessage, downstream http.Header) (*DiscoverResult, error) {
	if c.cfg.Transport == TransportStdio {
		return nil, c.newError("server/discover", 0, errors.Join(ErrNotModern, errNotStdio))
	}
	conn, err := c.Open(ctx, Handshake{ProtocolVersion: wire.ModernProtocolVersion, SkipInitialize: true, ClientInfo: clientInfo}, downstream)
	if err != nil {
		return nil, err
	}
	defer conn.Close(false)
	resp, err := conn.Call(ctx, "server/discover", nil, nil)
	if err != nil {
		return nil, c.newError("server/discover", 0, errors.Join(ErrNotModern, err))
	}
	if resp.Error != nil {
		return nil, c.newError("server/discover", 0, errors.Join(ErrNotModern, resp.Error))
	}
	var res DiscoverResult
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.SupportedVersions) == 0 {
		return nil, c.newError("server/discover", 0, ErrNotModern)
	}
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(resp.Result, &meta)
	res.ServerInfo = meta.Meta[metaServerInfo]
	res.Raw = resp.Result
	return &res, nil
}
