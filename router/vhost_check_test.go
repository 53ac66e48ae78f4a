package router_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router/policy"
)

// A vhost check matches every kind of published identifier (tools by
// their alias or prefixed name, prompts, resource URIs, templates) with
// the enforcement matcher: a pattern naming a tool by the prefixed name
// its alias replaced matches nothing, as it decides nothing.
func TestCheckVHosts_ReportsWhatEnforcementWouldIgnore(t *testing.T) {
	f, _ := twoBackendsWithAccess(t, []policy.AccessRule{{
		Allow: []string{"Public.Tool", "gateway-one-greeting", "gateway-two-test://template/*", "gateway-two-test://counter", "gateway-one-get_stats"},
		Deny:  []string{"gateway-two-echo", "gateway-one-ecko"},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checks := f.Router.CheckVHosts(ctx)
	if len(checks) != 1 || !checks[0].Complete {
		t.Fatalf("checks: %+v", checks)
	}
	vc := checks[0]
	var got []string
	for _, u := range vc.Unmatched {
		got = append(got, u.Field+" "+u.Pattern)
	}
	if want := []string{"access[0].allow[4] gateway-one-get_stats", "access[0].deny[1] gateway-one-ecko"}; !slices.Equal(got, want) {
		t.Fatalf("unmatched %q, want %q", got, want)
	}
	for _, b := range vc.Backends {
		if b.Err != "" || b.Tools != 3 || b.Prompts != 1 || b.Resources != 1 || b.Templates != 1 {
			t.Errorf("backend %+v", b)
		}
	}
}
