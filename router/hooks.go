package router

import "github.com/mcpgw/gateway/internal/wire"

// Hooks (package router/hook) run around the routed methods the method
// table marks Hooked: routed.go runs them, call_stream.go shows them
// progress.

// hooked reports whether a method runs hooks.
func hooked(method string) bool { return wire.MethodOf(method).Hooked }
