package wire

import (
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestDecode_MatchesTheSDK(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":7,"result":{"a":[1,2]}}`,
		`{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"no","data":{"x":1}}}`,
	} {
		got, err := Decode([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		want, err := jsonrpc.DecodeMessage([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		g, _ := jsonrpc.EncodeMessage(got)
		w, _ := jsonrpc.EncodeMessage(want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got  %s\n want %s", in, g, w)
		}
	}
}

func TestDecode_Rejects(t *testing.T) {
	for in, parse := range map[string]bool{
		`{"jsonrpc":`:                              true,
		`nope`:                                     true,
		`{"jsonrpc":"1.0","method":"x"}`:           false,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`:   false,
		`{"jsonrpc":"2.0","result":{}}`:            false,
		`{"jsonrpc":"2.0","method":7}`:             false,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`: false,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`:  false,
		`{"jsonrpc":"2.0","id":null,"result":{}}`:  false,
	} {
		_, err := Decode([]byte(in))
		if err == nil {
			t.Fatalf("%s accepted", in)
		}
		if errors.Is(err, ErrParse) != parse {
			t.Fatalf("%s: parse error = %v, want %v (%v)", in, errors.Is(err, ErrParse), parse, err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	in := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"hello"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
