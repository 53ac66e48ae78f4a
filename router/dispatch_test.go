package router

import (
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
)

// dispatchOf names how the router dispatches method (serve, handleModern):
// "self" for the methods it answers itself, "task" for the Tasks
// extension's, "list" for a list fan-out, "routed" for a method that
// targets one backend; "" for one it does not serve (-32601).
func dispatchOf(method string) string {
	switch method {
	case "ping", "initialize", "logging/setLevel", "server/discover", "subscriptions/listen":
		return "self"
	}
	switch _, list := listOps[method]; {
	case wire.MethodOf(method).Task:
		return "task"
	case list:
		return "list"
	}
	if _, ok := routedKind(method); ok {
		return "routed"
	}
	return ""
}

// TestDispatch_EveryMethodOfTheTable: every method of wire's table has a
// way through the router, and the table's facts agree with it (a routed
// method is one the table says targets a backend; a list is one that does
// not). A method added to the table without its dispatch fails here, not
// in a client's request.
func TestDispatch_EveryMethodOfTheTable(t *testing.T) {
	for _, m := range wire.MethodNames() {
		row := wire.MethodOf(m)
		switch got := dispatchOf(m); got {
		case "":
			t.Errorf("%s is in wire's method table but the router does not dispatch it", m)
		case "routed":
			if row.Routed == "" {
				t.Errorf("%s is routed, but its row names no identifier kind", m)
			}
		case "list":
			if row.Routed != "" || row.Task {
				t.Errorf("%s fans out, but its row says it targets one backend", m)
			}
		}
	}
	for _, m := range []string{"tools/made-up", "notifications/initialized"} {
		if got := dispatchOf(m); got != "" {
			t.Errorf("%s dispatches as %q", m, got)
		}
	}
}
