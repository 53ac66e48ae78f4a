package sealed

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestCursor_RoundTrip(t *testing.T) {
	key := []byte("k1")
	st := &Cursor{Op: "tools/list", VHost: "demo", Backends: map[string]BackendCursor{
		"a": {Cursor: "abc"}, "b": {Done: true},
	}}
	tok, err := SealCursor(key, st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenCursor(key, tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != st.Op || got.VHost != st.VHost || got.Backends["a"].Cursor != "abc" || !got.Backends["b"].Done {
		t.Fatalf("round trip changed the state: %+v", got)
	}
}

// A cursor is sealed, not only signed: whoever holds it cannot read the
// backends of the walk or their own cursors (which may spell out a name
// the holder's access rules hide).
func TestCursor_RevealsNothingOfItsState(t *testing.T) {
	st := &Cursor{Op: "tools/list", VHost: "demo", Backends: map[string]BackendCursor{
		"secret-backend": {Cursor: "last-item-hidden_tool"},
	}}
	tok, err := SealCursor([]byte("k1"), st)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("cursor is not one base64url token: %v", err)
	}
	for _, s := range []string{"secret-backend", "hidden_tool", "tools/list", "demo"} {
		if strings.Contains(string(raw), s) || strings.Contains(tok, s) {
			t.Fatalf("cursor shows %q", s)
		}
	}
	again, _ := SealCursor([]byte("k1"), st)
	if again == tok {
		t.Fatal("two cursors of one state are equal: the seal has no nonce")
	}
}

func TestCursor_RejectsForgery(t *testing.T) {
	key := []byte("k1")
	tok, _ := SealCursor(key, &Cursor{Op: "tools/list", VHost: "demo", Backends: map[string]BackendCursor{"a": {Cursor: "1"}}})
	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)/2] ^= 1
	for name, bad := range map[string]string{
		"other key": func() string {
			t, _ := SealCursor([]byte("k2"), &Cursor{Op: "tools/list", VHost: "demo", Backends: map[string]BackendCursor{}})
			return t
		}(),
		"bit flipped": base64.RawURLEncoding.EncodeToString(flipped),
		"cut":         tok[:len(tok)-4],
		"plain json":  base64.RawURLEncoding.EncodeToString([]byte(`{"o":"tools/list","v":"demo","b":{"a":{"c":"999"}}}`)),
		"empty":       "",
		"garbage":     "%%%.***",
		"short":       "AAAA",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := OpenCursor(key, bad); err == nil {
				t.Fatalf("OpenCursor accepted %q", bad)
			}
		})
	}
}
