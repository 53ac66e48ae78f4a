package wire

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote_BoundsClientInput(t *testing.T) {
	cases := []struct {
		name, in string
		whole    bool // quoted in full, exactly as %q would
	}{
		{"short", "get_stats", true},
		{"empty", "", true},
		{"escapes", "a\"b\\c\n", true},
		{"just fits", strings.Repeat("a", MaxQuoted-2), true},
		{"one over", strings.Repeat("a", MaxQuoted-1), false},
		{"a megabyte", strings.Repeat("x", 1<<20), false},
		{"multibyte", strings.Repeat("é", 500), false},
		{"control characters", strings.Repeat("\x01", 500), false},
		{"invalid UTF-8", strings.Repeat("\xff", 500), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Quote(tc.in)
			if tc.whole {
				if got != strconv.Quote(tc.in) {
					t.Fatalf("Quote(%q) = %s", tc.in, got)
				}
				return
			}
			quoted, rest, ok := strings.Cut(got, `"... (`)
			quoted += `"`
			if !ok || rest != strconv.Itoa(len(tc.in))+" bytes)" {
				t.Fatalf("Quote of %d bytes = %s: want the cut quoted text and the length", len(tc.in), got)
			}
			if len(quoted) > MaxQuoted {
				t.Fatalf("quoted part is %d bytes, more than %d", len(quoted), MaxQuoted)
			}
			s, err := strconv.Unquote(quoted)
			if err != nil || !strings.HasPrefix(tc.in, s) || len(s) == 0 || !utf8.ValidString(s) && utf8.ValidString(tc.in) {
				t.Fatalf("quoted part %s is not a valid prefix of the input: %v", quoted, err)
			}
		})
	}
}
