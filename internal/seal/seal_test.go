package seal

import (
	"strings"
	"testing"
)

// Only the same secret, purpose and additional data open a sealed value;
// two seals of one value differ (a fresh nonce each).
func TestBox(t *testing.T) {
	b, _ := New([]byte("secret"), "purpose-a")
	other, _ := New([]byte("secret"), "purpose-b")
	s := b.SealString([]byte("hello"), []byte("ad"))
	if p, ok := b.OpenString(s, []byte("ad")); !ok || string(p) != "hello" {
		t.Fatalf("open: %q %v", p, ok)
	}
	if s == b.SealString([]byte("hello"), []byte("ad")) {
		t.Fatal("two seals are equal: no nonce")
	}
	for name, try := range map[string]func() bool{
		"another ad":      func() bool { _, ok := b.OpenString(s, []byte("other")); return ok },
		"another purpose": func() bool { _, ok := other.OpenString(s, []byte("ad")); return ok },
		"truncated":       func() bool { _, ok := b.OpenString(s[:10], []byte("ad")); return ok },
		"not base64":      func() bool { _, ok := b.OpenString(strings.Repeat("!", 40), []byte("ad")); return ok },
		"empty":           func() bool { _, ok := b.Open(nil, []byte("ad")); return ok },
	} {
		if try() {
			t.Errorf("%s opened", name)
		}
	}
}
