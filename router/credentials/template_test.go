package credentials

import (
	"strings"
	"testing"
)

func TestTemplate_ExpandsClaimsPerCaller(t *testing.T) {
	claims := map[string]any{
		"sub":                       "alice",
		"org":                       map[string]any{"id": "o-7", "tier": 3.0},
		"groups":                    []any{"dev", "ops"},
		"admin":                     true,
		"big":                       1234567890.0,
		"https://example.com/roles": []any{"reader"},
		"weird-name_1":              "w",
	}
	for _, tc := range []struct{ tpl, want string }{
		{"${claims.sub}", "alice"},
		{"user=${claims.sub};org=${claims.org.id}", "user=alice;org=o-7"},
		{"${claims.org.tier}", "3"},
		{"${claims.big}", "1234567890"},
		{"${claims.admin}", "true"},
		{"${claims.groups[0]}", "dev"},
		{"${claims.groups[1]}", "ops"},
		{"${claims.groups[*]}", "dev,ops"},
		{`${claims["https://example.com/roles"][*]}`, "reader"},
		{"${claims.weird-name_1}", "w"},
		{"plain", "plain"},
		{"", ""},
		{"$HOME ${other}", "$HOME ${other}"},
	} {
		t.Run(tc.tpl, func(t *testing.T) {
			tpl, err := ParseTemplate(tc.tpl, nil)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := tpl.Expand(claims)
			if err != nil || got != tc.want {
				t.Fatalf("Expand = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// A claim the caller's token does not fill is an error naming the claim,
// never a value; a claim that would break the header line is refused.
func TestTemplate_RefusesWhatTheTokenCannotFill(t *testing.T) {
	claims := map[string]any{
		"sub":    "alice\r\nX-Injected: yes",
		"org":    map[string]any{"id": nil},
		"groups": []any{},
		"nested": []any{[]any{"a"}},
		"name":   "ok",
	}
	for _, tc := range []struct{ tpl, want string }{
		{"${claims.missing}", "claim claims.missing is missing from the caller's token"},
		{"${claims.sub}", "claim claims.sub holds a control character"},
		{"${claims.org.id}", "claim claims.org.id is null"},
		{"${claims.org}", "claim claims.org is an object"},
		{"${claims.groups[0]}", "claim claims.groups[0] is missing: the array has 0 elements"},
		{"${claims.groups[*]}", "claim claims.groups[*] is missing: the array is empty"},
		{"${claims.nested[*]}", "claim claims.nested[*] is an array"},
		{"${claims.name[0]}", "claim claims.name[0] is not an array"},
		{"${claims.name.x}", "claim claims.name.x is missing (a value on its path is not an object)"},
	} {
		t.Run(tc.tpl, func(t *testing.T) {
			tpl, err := ParseTemplate(tc.tpl, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Expand(claims)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expand = %q, %v; want error %q", got, err, tc.want)
			}
			if strings.Contains(err.Error(), "alice") {
				t.Fatalf("error %q holds a claim value", err)
			}
		})
	}
	tpl, _ := ParseTemplate("${claims.sub}", nil)
	if _, err := tpl.Expand(nil); err == nil || !strings.Contains(err.Error(), "no token claims") {
		t.Fatalf("no claims at all: %v", err)
	}
	long, _ := ParseTemplate("${claims.v}", nil)
	if _, err := long.Expand(map[string]any{"v": strings.Repeat("x", maxExpandedBytes+1)}); err == nil {
		t.Fatal("an oversized claim was accepted")
	}
}

func TestTemplate_SyntaxErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ tpl, want string }{
		{"${claims.sub", "unterminated"},
		{"${claims}", "names no claim"},
		{"${claims.}", "a claim name is expected after '.' at offset 7"},
		{"${claims.a b}", "unexpected character at offset 8"},
		{"${claims.a[-1]}", "at offset 8: an array index"},
		{"${claims.a[01]}", "an array index"},
		{"${claims.a[*].b}", "[*] must be the last step"},
		{`${claims[""]}`, "a quoted claim name must be non-empty"},
		{`${claims["x}`, `a quoted claim name needs ["name"]`},
		{"${claims[0]}", "the claims themselves are not an array"},
		{strings.Repeat("${claims.a}", maxTemplateRefs+1), "more than 16 claim templates"},
	} {
		t.Run(tc.tpl, func(t *testing.T) {
			if _, err := ParseTemplate(tc.tpl, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseTemplate(%q) = %v, want %q", tc.tpl, err, tc.want)
			}
		})
	}
}

// Literal text goes through the literal function (config's ${VAR}
// expansion); claim references never do.
func TestTemplate_LiteralsAreExpandedAtLoad(t *testing.T) {
	var seen []string
	tpl, err := ParseTemplate("${ENV}-${claims.sub}-tail", func(s string) (string, error) {
		seen = append(seen, s)
		return strings.ReplaceAll(s, "${ENV}", "E"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, "|") != "${ENV}-|-tail" {
		t.Fatalf("literal pieces = %q", seen)
	}
	if got, _ := tpl.Expand(map[string]any{"sub": "s"}); got != "E-s-tail" {
		t.Fatalf("Expand = %q", got)
	}
	if !tpl.HasClaims() || strings.Join(tpl.Claims(), ",") != "claims.sub" {
		t.Fatalf("claims = %v", tpl.Claims())
	}
}
