package wire

import (
	"encoding/json"
	"testing"
)

// FuzzParseID: a JSON-RPC id from a client is a string or an integer
// within ±(2^53−1), echoed byte for byte; anything else is refused, and
// nothing panics. Run with `go test -run '^$' -fuzz '^FuzzParseID$'
// ./internal/wire/`; the seed corpus is in testdata/fuzz.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{`1`, `-9007199254740991`, `9007199254740992`, `"abc"`, `"\u00e9"`, `null`, `1.5`, `1e3`, `[]`, `{}`, `true`, `"\ud800"`, `0`, `-0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		id, err := ParseID(json.RawMessage(raw))
		if err != nil {
			return
		}
		switch v := id.Raw().(type) {
		case int64:
			if v > 1<<53-1 || v < -(1<<53-1) {
				t.Fatalf("%s parsed to %d, beyond ±(2^53−1)", raw, v)
			}
		case string:
		default:
			t.Fatalf("%s parsed to %T", raw, v)
		}
	})
}
