package router

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestCursor_RoundTrip(t *testing.T) {
	key := []byte("k1")
	st := &cursorState{Op: "tools/list", VHost: "demo", Backends: map[string]backendCursor{
		"a": {Cursor: "abc"}, "b": {Done: true},
	}}
	tok, err := encodeCursor(key, st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCursor(key, tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != st.Op || got.VHost != st.VHost || got.Backends["a"].Cursor != "abc" || !got.Backends["b"].Done {
		t.Fatalf("round trip changed the state: %+v", got)
	}
}

func TestCursor_RejectsForgery(t *testing.T) {
	key := []byte("k1")
	tok, _ := encodeCursor(key, &cursorState{Op: "tools/list", VHost: "demo", Backends: map[string]backendCursor{"a": {Cursor: "1"}}})
	payload, sig, _ := strings.Cut(tok, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"o":"tools/list","v":"demo","b":{"a":{"c":"999"}}}`))
	for name, bad := range map[string]string{
		"other key": func() string {
			t, _ := encodeCursor([]byte("k2"), &cursorState{Op: "tools/list", VHost: "demo", Backends: map[string]backendCursor{}})
			return t
		}(),
		"payload swapped":   forged + "." + sig,
		"signature cut":     payload + "." + sig[:10],
		"no signature":      payload,
		"empty":             "",
		"garbage":           "%%%.***",
		"not json":          base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + sig,
		"signature of junk": payload + ".AAAA",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeCursor(key, bad); err == nil {
				t.Fatalf("decodeCursor accepted %q", bad)
			}
		})
	}
}
