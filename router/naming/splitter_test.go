package naming

import "testing"

func TestSplitter_LongestKeyWins(t *testing.T) {
	s := NewSplitter([]string{"gateway", "gateway-one", "gw"})
	tests := []struct {
		id, key, rest string
		ok            bool
	}{
		{"gateway-one-increment", "gateway-one", "increment", true},
		{"gateway-two-increment", "gateway", "two-increment", true},
		{"gw-x", "gw", "x", true},
		{"gateway-oneincrement", "gateway", "oneincrement", true}, // "gateway-" matches the shorter key
		{"gwx", "", "", false},
		{"gw-", "", "", false},
		{"other-x", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			key, rest, ok := s.Split(tc.id)
			if key != tc.key || rest != tc.rest || ok != tc.ok {
				t.Fatalf("split(%q) = %q, %q, %v; want %q, %q, %v", tc.id, key, rest, ok, tc.key, tc.rest, tc.ok)
			}
		})
	}
}

func TestSplitter_RequiresDashAfterKey(t *testing.T) {
	s := NewSplitter([]string{"gateway-one", "gateway-two"})
	if _, _, ok := s.Split("gateway-oneincrement"); ok {
		t.Fatal("gateway-oneincrement must be rejected: no '-' after the key")
	}
	key, rest, ok := s.Split("gateway-one-increment")
	if !ok || key != "gateway-one" || rest != "increment" {
		t.Fatalf("got %q %q %v", key, rest, ok)
	}
	// The rest keeps its own dashes and any characters, URIs included.
	key, rest, ok = s.Split("gateway-two-test://template/123/data")
	if !ok || key != "gateway-two" || rest != "test://template/123/data" {
		t.Fatalf("got %q %q %v", key, rest, ok)
	}
}
