package policy

import (
	"errors"
	"strings"
	"testing"
)

func mustCompileAccess(t testing.TB, rules ...AccessRule) *AccessPolicy {
	t.Helper()
	p, err := CompileAccess(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompileAccess_NamesTheRuleAndFieldThatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []AccessRule
		rule  int
		field string
		says  string
	}{
		{"syntax", []AccessRule{{When: "true", Allow: []string{"*"}}, {When: "claims.sub ==", Allow: []string{"*"}}},
			1, "when", "invalid CEL expression"},
		{"unknown variable", []AccessRule{{When: "user.admin == true", Allow: []string{"*"}}},
			0, "when", "undeclared reference to 'user'"},
		{"not boolean", []AccessRule{{When: "claims.sub", Allow: []string{"*"}}},
			0, "when", "must be a boolean"},
		{"string, not boolean", []AccessRule{{When: "vhost + 'x'", Allow: []string{"*"}}},
			0, "when", "not string"},
		{"empty allow pattern", []AccessRule{{Allow: []string{"a-*", ""}}},
			0, "allow[1]", "empty pattern"},
		{"empty deny pattern", []AccessRule{{Allow: []string{"*"}, Deny: []string{""}}},
			0, "deny[0]", "empty pattern"},
		{"deny without allow", []AccessRule{{When: "true", Deny: []string{"x"}}, {Allow: []string{"*"}}},
			0, "deny", "no effect without allow"},
		{"rule after an unconditional one", []AccessRule{{Allow: []string{"*"}}, {When: "true", Allow: []string{"a"}}},
			1, "", "can never apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileAccess(tc.rules)
			var re *AccessRuleError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want an *AccessRuleError", err)
			}
			if re.Rule != tc.rule || re.Field != tc.field || !strings.Contains(re.Msg, tc.says) {
				t.Fatalf("got rule %d field %q %q, want rule %d field %q saying %q", re.Rule, re.Field, re.Msg, tc.rule, tc.field, tc.says)
			}
		})
	}
}

func TestAccessPolicy_FirstRuleWhoseConditionHoldsDecides(t *testing.T) {
	p := mustCompileAccess(t,
		AccessRule{When: "'admins' in claims.groups", Allow: []string{"*"}},
		AccessRule{When: "claims.level >= 2 && vhost == 'demo'", Allow: []string{"gw-*"}, Deny: []string{"gw-delete_*"}},
		AccessRule{When: "claims.sub.startsWith('svc-')", Allow: []string{"gw-read"}},
	)
	for _, tc := range []struct {
		name    string
		vhost   string
		claims  map[string]any
		visible []string
		hidden  []string
	}{
		{"admin sees everything", "demo", map[string]any{"groups": []any{"admins"}, "level": 0.0},
			[]string{"gw-delete_all", "other-x", "Public.Tool"}, nil},
		// JSON numbers in claims are doubles; CEL compares them with ints.
		{"level 2 sees gw but not its deletes", "demo", map[string]any{"level": 2.0},
			[]string{"gw-read", "gw-x"}, []string{"gw-delete_all", "other-x"}},
		{"the vhost is part of the condition", "other", map[string]any{"level": 2.0},
			nil, []string{"gw-read", "gw-x"}},
		// A claim the token lacks makes a rule not hold (no error escapes).
		{"missing claims fall through to a later rule", "demo", map[string]any{"sub": "svc-1"},
			[]string{"gw-read"}, []string{"gw-x"}},
		{"no rule holds: nothing is visible", "demo", map[string]any{"sub": "bob"},
			nil, []string{"gw-read", "x"}},
		{"no claims at all (auth none)", "demo", nil,
			nil, []string{"gw-read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := p.Decide(tc.vhost, tc.claims)
			for _, n := range tc.visible {
				if !a.Visible(n) {
					t.Errorf("%q hidden, want visible", n)
				}
			}
			for _, n := range tc.hidden {
				if a.Visible(n) {
					t.Errorf("%q visible, want hidden", n)
				}
			}
		})
	}
}

func TestAccessPolicy_NilAndEmpty(t *testing.T) {
	var none *AccessPolicy
	if a := none.Decide("demo", nil); !a.Visible("anything") || !a.All() {
		t.Fatal("no policy must show everything")
	}
	empty := mustCompileAccess(t)
	if a := empty.Decide("demo", map[string]any{"sub": "x"}); a.Visible("anything") {
		t.Fatal("an empty rule list must hide everything")
	}
}

func TestAccessPolicy_DependsOnClaimsOnlyWhenAConditionReadsThem(t *testing.T) {
	for _, tc := range []struct {
		rules []AccessRule
		want  bool
	}{
		{[]AccessRule{{Allow: []string{"*"}}}, false},
		{[]AccessRule{{When: "vhost == 'demo'", Allow: []string{"*"}}}, false},
		{[]AccessRule{{When: "vhost == 'demo'", Allow: []string{"*"}}, {When: "has(claims.admin)", Allow: []string{"*"}}}, true},
		{[]AccessRule{{When: "size(claims) > 0", Allow: []string{"*"}}}, true},
	} {
		if got := mustCompileAccess(t, tc.rules...).DependsOnClaims(); got != tc.want {
			t.Errorf("%+v: DependsOnClaims = %v, want %v", tc.rules, got, tc.want)
		}
	}
}

func TestAccessPolicy_ExpensiveConditionFailsClosed(t *testing.T) {
	p := mustCompileAccess(t, AccessRule{
		When:  "claims.items.all(a, claims.items.all(b, claims.items.all(c, a + b + c >= 0)))",
		Allow: []string{"*"},
	})
	items := make([]any, 200)
	for i := range items {
		items[i] = float64(i)
	}
	if p.Decide("demo", map[string]any{"items": items}).Visible("x") {
		t.Fatal("a condition past the cost limit held")
	}
	if !p.Decide("demo", map[string]any{"items": items[:3]}).Visible("x") {
		t.Fatal("a cheap evaluation of the same condition did not hold")
	}
}
