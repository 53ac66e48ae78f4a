package policy

import "testing"

func TestNameGlob_MatchesWithStarAsTheOnlyWildcard(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything/at all?x=1", true},
		{"gateway-one-*", "gateway-one-increment", true},
		{"gateway-one-*", "gateway-one-", true},
		{"gateway-one-*", "gateway-two-increment", false},
		{"gateway-one-*", "xgateway-one-increment", false},
		{"Public.Tool", "Public.Tool", true},
		{"Public.Tool", "Public.Tools", false},
		{"Public.Tool", "public.tool", false},
		// '/' is an ordinary character: one '*' spans path segments.
		{"gateway-two-test://*", "gateway-two-test://template/1/data", true},
		{"gateway-two-test://*/data", "gateway-two-test://template/1/data", true},
		{"gateway-two-test://*/data", "gateway-two-test://template/1/data/x", false},
		// '?', '[', '{' and '\' mean themselves: URIs and templates hold them.
		{"gateway-two-test://template/{id}/data", "gateway-two-test://template/{id}/data", true},
		{"gateway-two-test://template/{id}/data", "gateway-two-test://template/1/data", false},
		{"x://a?b=*", "x://a?b=1", true},
		{"x://a?b=*", "x://aXb=1", false},
		{"[ab]", "a", false},
		{"[ab]", "[ab]", true},
		{"*delete*", "gateway-one-delete_all", true},
		{"*delete*", "gateway-one-remove", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a**c", "abc", true},
		{"ab*ba", "aba", false}, // head and tail may not overlap
		{"ab*ba", "abba", true},
	} {
		g, err := compileGlob(tc.glob)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tc.glob, err)
		}
		if got := g.match(tc.name); got != tc.want {
			t.Errorf("%q matching %q = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}

func TestNameGlob_RefusesEmptyAndControlCharacters(t *testing.T) {
	for _, bad := range []string{"", "a\nb", "tab\there"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted it", bad)
		}
	}
}

// canPrefix and coversPrefix decide whether a backend ("key-") can show a
// caller anything: canPrefix must never say no when some name matches,
// coversPrefix never yes when some name escapes.
func TestNameGlob_PrefixQuestions(t *testing.T) {
	for _, tc := range []struct {
		glob, prefix     string
		canPrefix, cover bool
	}{
		{"*", "gw-", true, true},
		{"*", "", true, true},
		{"gw-*", "gw-", true, true},
		{"g*", "gw-", true, true},
		{"gw-one-*", "gw-", true, false},
		{"gw-one-x", "gw-", true, false},
		{"other-*", "gw-", false, false},
		{"gw", "gw-", false, false},
		{"*-x", "gw-", true, false},
		{"Public.Tool", "gw-", false, false},
		{"gw-*-x", "gw-", true, false},
	} {
		g, _ := compileGlob(tc.glob)
		if got := g.canPrefix(tc.prefix); got != tc.canPrefix {
			t.Errorf("%q canPrefix(%q) = %v, want %v", tc.glob, tc.prefix, got, tc.canPrefix)
		}
		if got := g.coversPrefix(tc.prefix); got != tc.cover {
			t.Errorf("%q coversPrefix(%q) = %v, want %v", tc.glob, tc.prefix, got, tc.cover)
		}
	}
}
