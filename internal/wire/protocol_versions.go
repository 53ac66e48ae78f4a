package wire

// The MCP protocol versions the gateway knows, and which of them it speaks
// where. This is the one table: the handler checks a client's
// MCP-Protocol-Version against it, the router negotiates initialize and
// requests backends' versions from it, and the backend client
// (router/upstream) accepts backends' answers by it. It lives here, below
// all three, because it describes the wire on both sides of the gateway.
const (
	// ProtocolVersion20241105 is the legacy HTTP+SSE transport's version.
	// The gateway speaks it to backends (`transport: sse`), never to
	// clients: downstream it serves Streamable HTTP only.
	ProtocolVersion20241105 = "2024-11-05"
	// ProtocolVersion20250326 is the first Streamable HTTP version, and
	// the only one with JSON-RPC batches.
	ProtocolVersion20250326 = "2025-03-26"
	ProtocolVersion20250618 = "2025-06-18"
	ProtocolVersion20251125 = "2025-11-25"

	// ModernProtocolVersion is the sessionless revision: no initialize,
	// every request carries its client in params._meta. The gateway serves
	// it beside the session versions on the same endpoint, and speaks it
	// to backends that discover as modern.
	ModernProtocolVersion = "2026-07-28"

	// LatestProtocolVersion is the newest session version the gateway speaks. A
	// client whose initialize asks for a version the gateway does not
	// speak is offered it, and a backend with no usable snapshot is asked
	// for it, on either transport.
	LatestProtocolVersion = ProtocolVersion20251125
	// LegacySSEProtocolVersion is what the backend client asks an HTTP+SSE
	// backend for when its caller names no version.
	LegacySSEProtocolVersion = ProtocolVersion20241105
	// BatchProtocolVersion is the one version in which a client may POST a
	// JSON-RPC batch.
	BatchProtocolVersion = ProtocolVersion20250326
	// DefaultProtocolVersion is what a request without MCP-Protocol-Version
	// speaks when nothing else says (the transport spec's rule). On a
	// session the version negotiated at initialize says: see
	// RequestProtocolVersion.
	DefaultProtocolVersion = ProtocolVersion20250326
)

// ServesProtocolVersion reports whether the gateway speaks v with clients:
// the Streamable HTTP versions. A request naming another one is refused
// (HTTP 400), and an initialize asking for another one is offered
// LatestProtocolVersion.
func ServesProtocolVersion(v string) bool {
	switch v {
	case ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326:
		return true
	}
	return false
}

// KnowsProtocolVersion reports whether the gateway can speak v with a
// backend: every session version of the table. A backend whose initialize
// answers with another one is disconnected rather than spoken to by
// guesswork.
func KnowsProtocolVersion(v string) bool {
	return v == ProtocolVersion20241105 || ServesProtocolVersion(v)
}

// AllProtocolVersions lists every version the gateway serves clients,
// newest first: the sessionless revision, then the session versions. It is
// server/discover's supportedVersions and -32022's data.supported.
func AllProtocolVersions() []string {
	return []string{ModernProtocolVersion, ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326}
}

// IsModernVersion reports whether v names a sessionless revision: the
// revision compares versions as text, so any version at or after
// 2026-07-28 does ("v999.0.0" too, an unknown one), and a session version
// never does.
func IsModernVersion(v string) bool {
	return v >= ModernProtocolVersion && !ServesProtocolVersion(v) && v != ProtocolVersion20241105
}

// RequestProtocolVersion is the version one request of a session speaks:
// its MCP-Protocol-Version header when it has one, else the version the
// session negotiated at initialize (the transport spec lets a server rely
// on that), else DefaultProtocolVersion.
func RequestProtocolVersion(header, negotiated string) string {
	switch {
	case header != "":
		return header
	case negotiated != "":
		return negotiated
	}
	return DefaultProtocolVersion
}
