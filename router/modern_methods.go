package router

import "github.com/mcpgw/gateway/internal/wire"

// The facts of each MCP method are one table, internal/wire/methods.go;
// these read it for the router and its callers.

// ModernMethod reports whether method is a request of protocol 2026-07-28.
// Its removed methods (initialize, ping, logging/setLevel,
// resources/subscribe and unsubscribe) are unknown in that generation:
// HTTP 404 and -32601, like any method it never had.
func ModernMethod(method string) bool { return wire.MethodOf(method).Modern }

// NameField names the params field a modern request's Mcp-Name header
// mirrors ("name" or "uri"), or "" for a method without one.
func NameField(method string) string { return wire.MethodOf(method).NameField }

// multiRoundTrip reports whether a method may answer input_required
// (protocol 2026-07-28's multi-round-trip requests).
func multiRoundTrip(method string) bool { return wire.MethodOf(method).MultiRoundTrip }

// ValidLogLevel reports whether level is an MCP log level.
func ValidLogLevel(level string) bool { return wire.LogLevelRank(level) > 0 }

// routedKind names what a routed method routes on ("tool", ...); ok is
// false for a method that does not target one backend.
func routedKind(method string) (kind string, ok bool) {
	k := wire.MethodOf(method).Routed
	return k, k != ""
}
