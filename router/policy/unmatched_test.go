package policy

import (
	"slices"
	"testing"
	"time"
)

// Unmatched uses the enforcement matcher: a pattern is reported exactly
// when no published name would be shown or hidden by it.
func TestUnmatched_ReportsOnlyPatternsThatMatchNothing(t *testing.T) {
	p, err := CompileAccess([]AccessRule{
		{When: "claims.admin == true", Allow: []string{"*"}},
		{Allow: []string{"one-*", "three-*"}, Deny: []string{"one-delete", "one-dlete", "test://*"}, Scopes: []string{"read"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"one-echo", "one-delete", "two-echo"}
	var got []string
	for _, u := range p.Unmatched(ids) {
		got = append(got, u.Kind+" "+u.Field+" "+u.Pattern)
	}
	want := []string{"allow access[1].allow[1] three-*", "deny access[1].deny[1] one-dlete", "deny access[1].deny[2] test://*"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	rl, err := CompileRateLimits([]RateLimit{{Per: RatePerVHost, Limit: 1, Window: time.Second}, {Per: RatePerPrincipal, Tools: []string{"two-*", "tow-*"}, Limit: 1, Window: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if u := rl.Unmatched(ids); len(u) != 1 || u[0].Field != "rate_limits[1].tools[1]" || u[0].Kind != PatternRateTools {
		t.Fatalf("rate limits: %+v", u)
	}
	var nilPolicy *AccessPolicy
	if nilPolicy.Unmatched(ids) != nil {
		t.Fatal("a nil policy reports patterns")
	}
}
