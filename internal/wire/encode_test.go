package wire_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestEncodeResponse_MeansWhatTheSDKWrites(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	cases := map[string]*jsonrpc.Response{
		"int id":             {ID: id(float64(7)), Result: json.RawMessage(`{"tools":[]}`)},
		"string id":          {ID: id(`a"b\u2028`), Result: json.RawMessage(`{"x":1}`)},
		"whitespace kept":    {ID: id("s"), Result: json.RawMessage("{ \"content\" : [ ] }")},
		"error":              {ID: id(float64(1)), Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
		"empty result":       {ID: id(float64(2)), Result: json.RawMessage(`{}`)},
		"unicode in result":  {ID: id(float64(3)), Result: json.RawMessage(`{"text":"héllo \u00e9 <&>"}`)},
		"nested raw strings": {ID: id(float64(4)), Result: json.RawMessage(`{"a":"]}\"{"}`)},
	}
	for name, resp := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := wire.EncodeResponse(resp)
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonrpc.EncodeMessage(resp)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("not JSON: %s", got)
			}
			_ = json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("got %s, SDK writes %s", got, want)
			}
			// And it decodes back to the same response.
			msg, err := wire.Decode(got)
			if back, ok := msg.(*jsonrpc.Response); err != nil || !ok || back.ID != resp.ID {
				t.Fatalf("round trip of %s: %v", got, err)
			}
		})
	}
}

// AppendResponseHead, the result and a closing brace are the bytes
// EncodeResponseAs writes, for every response it takes; the others it
// declines, leaving dst as it was.
func TestAppendResponseHead_IsEncodeResponseAs(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		i, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	result := json.RawMessage(`{"tools":[{"name":"a"}]}`)
	for _, c := range []struct {
		resp  *jsonrpc.Response
		rawID string
		ok    bool
	}{
		{&jsonrpc.Response{ID: id(float64(7)), Result: result}, "", true},
		{&jsonrpc.Response{ID: id(`a"b\u2028<`), Result: result}, "", true},
		{&jsonrpc.Response{ID: id(float64(7)), Result: result}, `"\u0037"`, true},
		{&jsonrpc.Response{Result: result}, `7`, true},
		{&jsonrpc.Response{Result: result}, "", false},
		{&jsonrpc.Response{ID: id(float64(1)), Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}, "1", false},
		{&jsonrpc.Response{ID: id(float64(1))}, "1", false},
	} {
		head, ok := wire.AppendResponseHead([]byte("x"), c.resp, json.RawMessage(c.rawID))
		if ok != c.ok {
			t.Fatalf("%+v %s: ok %v", c.resp, c.rawID, ok)
		}
		if !ok {
			if string(head) != "x" {
				t.Fatalf("declined, dst %q", head)
			}
			continue
		}
		want, err := wire.EncodeResponseAs(c.resp, json.RawMessage(c.rawID))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(head[1:]) + string(c.resp.Result) + "}"; got != string(want) {
			t.Fatalf("head+result = %s, EncodeResponseAs %s", got, want)
		}
	}
}

func BenchmarkEncodeResponse(b *testing.B) {
	result := make([]byte, 0, 8<<10)
	result = append(result, `{"tools":[`...)
	for i := range 24 {
		if i > 0 {
			result = append(result, ',')
		}
		result = append(result, `{"name":"b1-echo","description":"Return the given text unchanged.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}`...)
	}
	result = append(result, `]}`...)
	id, _ := jsonrpc.MakeID(float64(1))
	resp := &jsonrpc.Response{ID: id, Result: result}
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			_, _ = jsonrpc.EncodeMessage(resp)
		}
	})
	b.Run("wire", func(b *testing.B) {
		for b.Loop() {
			_, _ = wire.EncodeResponse(resp)
		}
	})
}

func TestErrorBody_OneShapeForEveryTransportError(t *testing.T) {
	cases := []struct {
		name  string
		rawID json.RawMessage
		code  int64
		msg   string
		want  string
	}{
		{"no id", nil, wire.CodeUnauthorized, "Unauthorized: bearer token required",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32010,"message":"Unauthorized: bearer token required"}}` + "\n"},
		{"id as the client wrote it", json.RawMessage(`"a\u0062"`), wire.CodeInternalError, "session store unavailable",
			`{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32603,"message":"session store unavailable"}}` + "\n"},
		{"message escaped", nil, wire.CodeInvalidRequest, `bad "x"` + "\n",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"x\"\n"}}` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := wire.ErrorBodyOf(tc.rawID, &jsonrpc.Error{Code: tc.code, Message: tc.msg})
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
		})
	}
}

// WriteError is the one writer of error answers: status, JSON body with
// the request's own id and the error's data, Retry-After rounded up to
// whole seconds and never 0.
func TestWriteError_StatusBodyAndRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{{0, ""}, {time.Millisecond, "1"}, {1500 * time.Millisecond, "2"}, {5 * time.Second, "5"}} {
		rec := httptest.NewRecorder()
		wire.WriteError(rec, http.StatusTooManyRequests, json.RawMessage(`"r-1"`),
			&jsonrpc.Error{Code: wire.CodeRateLimited, Message: "slow down", Data: json.RawMessage(`{"limit":"x"}`)}, tc.wait)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		if got := rec.Header().Get("Retry-After"); got != tc.want {
			t.Errorf("wait %v: Retry-After %q, want %q", tc.wait, got, tc.want)
		}
		want := `{"jsonrpc":"2.0","id":"r-1","error":{"code":-32029,"message":"slow down","data":{"limit":"x"}}}` + "\n"
		if rec.Body.String() != want {
			t.Errorf("body %s, want %s", rec.Body, want)
		}
	}
}
