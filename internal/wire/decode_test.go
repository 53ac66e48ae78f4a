package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// A message decodes exactly as encoding/json decodes it, whatever its
// members and its size: the same message, id and error, or the same
// refusal (FuzzDecode tries more).
func TestDecode_AsEncodingJSON(t *testing.T) {
	big := `{"tools":[` + strings.Repeat(`{"name":"t","description":"a \"quoted\" \\ word, \u00e9"},`, 100) + `{}]}`
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":7,"result":` + big + `}`,
		`{"result":` + big + `,"id":"x","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"method":null,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"other":[1,2],"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"Result":{},"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"result":` + big + `,"Result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":` + big + `,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"res\u0075lt":` + big + `}`,
		`{"jsonrpc":"2.0","ID":1,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":null,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-1,"message":"` + strings.Repeat("x", 5000) + `"}}`,
		`{"jsonrpc":2,"id":1,"result":` + big + `}`,
		`{"jsonrpc":"2.0","id":1,"result":` + big,
		`[{"jsonrpc":"2.0","id":1,"result":` + big + `}]`,
		`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"no"}}`,
		`{"jsonrpc":"2.0","id":1,"error":5}`,
		`{"jsonrpc":"2.0","id":1,"error":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"a\u00e9\n"}`,
		`{"jsonrpc":"2.0","id":1,"method":"a\ud800"}`,
		`{"jsonrpc":"2.0","id":1,"method":"caf\u00e9","params":null}`,
		`{"jsonrpc":null,"id":1,"method":"x"}`,
		`{"jsonrpc":"2.\u0030","id":1,"method":"x"}`,
		`{"JSONRPC":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":[1],"method":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"x","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"} `,
		` {"jsonrpc":"2.0","id":1,"method":"x"}x`,
		`{"jsonrpc":"2.0","id":1,"method":"x",}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{"id":1}`,
	} {
		if diff := differsFromEncodingJSON([]byte(in)); diff != "" {
			t.Errorf("%.60s...: %s", in, diff)
		}
	}
}

// differsFromEncodingJSON says how DecodeWithID's answer for in differs
// from encoding/json's decoding of it into the wire message ("" when it
// does not): the same message and id, or an error where encoding/json
// refuses.
func differsFromEncodingJSON(in []byte) string {
	var w wireMessage
	var want jsonrpc.Message
	var wantID json.RawMessage
	wantErr := json.Unmarshal(in, &w)
	if wantErr == nil {
		want, wantID, wantErr = w.message()
	}
	got, gotID, err := DecodeWithID(in)
	if (err != nil) != (wantErr != nil) {
		return fmt.Sprintf("error %v, encoding/json's %v", err, wantErr)
	}
	if err != nil {
		return ""
	}
	g, _ := jsonrpc.EncodeMessage(got)
	wb, _ := jsonrpc.EncodeMessage(want)
	if string(g) != string(wb) || string(gotID) != string(wantID) {
		return fmt.Sprintf("\n got  %.200s (id %s)\n want %.200s (id %s)", g, gotID, wb, wantID)
	}
	return ""
}

// BenchmarkDecode_ListPage decodes a backend's answer of 200 tools (74
// kB), as the upstream client does for every list page; encoding-json is
// how every message was decoded before decodeBig.
func BenchmarkDecode_ListPage(b *testing.B) {
	item := `{"name":"search_issues","title":"search issues","description":"Use this tool to search issues in the workspace the user is signed in to. Results are paginated.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"Free text matched against the issues' title"}},"required":["query"]},"annotations":{"readOnlyHint":true}}`
	in := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Repeat(item+",", 199) + item + `]}}`)
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			var w wireMessage
			if err := json.Unmarshal(in, &w); err != nil {
				b.Fatal(err)
			}
			if _, _, err := w.message(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// DecodeOwned decodes what Decode does; a large message's result is the
// caller's bytes, not a copy.
func TestDecodeOwned_SharesALargeResult(t *testing.T) {
	for _, in := range []string{string(listPage(200)), `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1]}}`, `{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat(" ", 5000) + `x}`} {
		want, wantErr := Decode([]byte(in))
		data := []byte(in)
		got, err := DecodeOwned(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%.60s: error %v, Decode's %v", in, err, wantErr)
		}
		if err != nil {
			continue
		}
		g, _ := jsonrpc.EncodeMessage(got)
		w, _ := jsonrpc.EncodeMessage(want)
		if string(g) != string(w) {
			t.Fatalf("%.60s: %.100s, Decode's %.100s", in, g, w)
		}
	}
	data := listPage(200)
	msg, err := DecodeOwned(data)
	if err != nil {
		t.Fatal(err)
	}
	res := msg.(*jsonrpc.Response).Result
	if &res[0] != &data[bytes.Index(data, []byte(`{"tools"`))] {
		t.Fatal("the result was copied")
	}
}
