package wire

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// FuzzDecode: DecodeWithID decodes every input as encoding/json decodes it
// into the wire message: the same message and id, or a refusal where
// encoding/json refuses. Run with `go test -run '^$' -fuzz '^FuzzDecode$'
// ./internal/wire/`.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"Method":"x","jsonrpc":"2.0","id":1}`, `{"jsonrpc":"2.0","id":1,"method":"x","method":null}`,
		`{"jsonrpc":"2.\u0030","id":1,"method":"\u00e9"}`, `[]`, `{"id":1e400}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if diff := differsFromEncodingJSON([]byte(in)); diff != "" {
			t.Fatalf("%q: %s", in, diff)
		}
		checkDecodeOwnedChecked(t, []byte(in))
		want, err := Decode([]byte(in))
		if err != nil {
			return
		}
		g, _ := jsonrpc.EncodeMessage(want)
		owned, err := DecodeOwned([]byte(in))
		if err != nil {
			t.Fatalf("%q: DecodeOwned: %v", in, err)
		}
		if o, _ := jsonrpc.EncodeMessage(owned); string(o) != string(g) {
			t.Fatalf("%q: DecodeOwned %s, DecodeWithID %s", in, o, g)
		}
	})
}
