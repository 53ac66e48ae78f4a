package router

import "time"

// Transport names how the gateway talks to a backend.
type Transport string

const (
	// TransportStreamableHTTP is the MCP Streamable HTTP transport (2025-03-26 on).
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE is the legacy HTTP+SSE transport (2024-11-05).
	TransportSSE Transport = "sse"
)

// SessionMode says how a backend's own MCP session is handled.
type SessionMode string

const (
	// SessionPerRequest opens a fresh backend session for each routed request (default).
	SessionPerRequest SessionMode = "per-request"
	// SessionReuse keeps the backend's session id in the store and reuses it.
	SessionReuse SessionMode = "reuse"
)

// Backend is one configured upstream MCP server of a virtual host.
type Backend struct {
	// Key is the backend map key: the public prefix on multi-backend vhosts.
	Key       string
	URL       string
	Transport Transport
	// Timeout bounds each backend request (handshake included).
	Timeout time.Duration
	// PassthroughHeaders are copied from the downstream request (never Authorization).
	PassthroughHeaders []string
	// AddHeaders are set on every backend request; values are already
	// ${ENV}-expanded and may hold secrets: never log them.
	AddHeaders map[string]string
	// RemoveHeaders are deleted last, so remove wins over add and passthrough.
	RemoveHeaders []string
	// ToolNameAliases maps a downstream alias to the backend's tool name.
	ToolNameAliases map[string]string
	Session         SessionMode
	// ListCacheTTL, when positive, caches this backend's list pages on
	// each instance for that long (see list_cache.go); 0 turns it off.
	ListCacheTTL time.Duration
}

// VirtualHost is one /servers/{name}/mcp endpoint and its backends.
type VirtualHost struct {
	Name     string
	Backends map[string]*Backend
}
