package router

import "github.com/mcpgw/gateway/internal/wire"

// The facts of each MCP method are one table, internal/wire/methods.go;
// these read it where the router asks one question of a method.

// routedKind names what a routed method routes on ("tool", ...); ok is
// false for a method that does not target one backend.
func routedKind(method string) (kind string, ok bool) {
	k := wire.MethodOf(method).Routed
	return k, k != ""
}

// multiRoundTrip reports whether a method may answer input_required
// (protocol 2026-07-28's multi-round-trip requests).
func multiRoundTrip(method string) bool { return wire.MethodOf(method).MultiRoundTrip }

// hooked reports whether a method runs hooks (package router/hook):
// routed.go runs them, call_stream.go shows them progress.
func hooked(method string) bool { return wire.MethodOf(method).Hooked }
