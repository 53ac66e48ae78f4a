package metrics

import (
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
)

// TestRPCLabel_EveryMethodOfTheTable: every method of wire's table, and
// every client notification, is a label of its own (tasks/get, update and
// cancel were once counted as "other"); any other name is "other".
func TestRPCLabel_EveryMethodOfTheTable(t *testing.T) {
	names := append(wire.MethodNames(), wire.ClientNotifications[:]...)
	for _, m := range names {
		if got := rpcLabel(m); got != m {
			t.Errorf("rpcLabel(%q) = %q, want its own label", m, got)
		}
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if rpcLabel(m) != m {
			t.Errorf("%s has no label of its own", m)
		}
	}
	for _, m := range []string{"tools/made-up", "", "Tools/List", "notifications/message"} {
		if got := rpcLabel(m); got != "other" {
			t.Errorf("rpcLabel(%q) = %q, want other", m, got)
		}
	}
	if rpcLabel("response") != "response" {
		t.Error(`a client's answer is not labelled "response"`)
	}
}
