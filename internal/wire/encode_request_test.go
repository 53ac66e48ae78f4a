package wire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// EncodeRequest means what the SDK's encoder writes, for requests and
// notifications, every id form and params as the client spelled them.
func TestEncodeRequest_MeansWhatTheSDKWrites(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	for _, req := range []*jsonrpc.Request{
		{ID: id(7.0), Method: "tools/call", Params: json.RawMessage(`{ "name" : "echo", "arguments":{"t":"<&>"} }`)},
		{ID: id("a\"b<é>"), Method: "resources/read", Params: json.RawMessage(`{"uri":"x://y"}`)},
		{ID: id(-1.0), Method: "ping"},
		{Method: "notifications/initialized"},
		{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":7}`)},
		{ID: id(1.0), Method: "m\u2028\"x", Params: json.RawMessage(`null`)},
	} {
		got, err := EncodeRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := jsonrpc.EncodeMessage(req)
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
		back, err := Decode(got)
		if err != nil || back.(*jsonrpc.Request).ID != req.ID || back.(*jsonrpc.Request).Method != req.Method {
			t.Errorf("%s does not decode back: %v", got, err)
		}
	}
}

func BenchmarkEncodeRequest(b *testing.B) {
	i, _ := jsonrpc.MakeID(42.0)
	req := &jsonrpc.Request{ID: i, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)}
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = EncodeRequest(req)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jsonrpc.EncodeMessage(req)
		}
	})
}
