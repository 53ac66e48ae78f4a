package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestRequestID_ParsedExactlyOrRefused(t *testing.T) {
	cases := []struct {
		raw  string
		want any    // the id's value (int64 or string); nil: refused
		msg  string // for refusals: part of the message
	}{
		{`1`, int64(1), ""},
		{`0`, int64(0), ""},
		{`-7`, int64(-7), ""},
		{`9007199254740991`, int64(9007199254740991), ""}, // 2^53-1: the largest exact id
		{`-9007199254740991`, int64(-9007199254740991), ""},
		{`9007199254740992`, nil, "outside ±(2^53−1)"}, // 2^53 and 2^53+1 were one id through float64
		{`9007199254740993`, nil, "outside ±(2^53−1)"},
		{`-9223372036854775808`, nil, "outside ±(2^53−1)"},
		{`"abc"`, "abc", ""},
		{`""`, "", ""},
		{`"\u0041\/"`, "A/", ""},
		{`"\ud83d\ude00"`, "\U0001F600", ""}, // a surrogate pair is one character
		{`"\ufffd"`, "\ufffd", ""},           // U+FFFD spelled out is real text
		{`null`, nil, "not null"},
		{`1.5`, nil, "not an integer"},
		{`1.0`, nil, "not an integer"},
		{`1e3`, nil, "not an integer"},
		{`-1E0`, nil, "not an integer"},
		{`9223372036854775808`, nil, "outside ±(2^53−1)"}, // 2^63
		{`-9223372036854775809`, nil, "outside ±(2^53−1)"},
		{`true`, nil, "string or an integer"},
		{`{}`, nil, "string or an integer"},
		{`[1]`, nil, "string or an integer"},
		{`"\ud800"`, nil, "Unicode"},       // a lone high surrogate
		{`"\udc00x"`, nil, "Unicode"},      // a lone low surrogate
		{`"\ud800\u0041"`, nil, "Unicode"}, // high surrogate, no low one
		{"\"\xff\"", nil, "Unicode"},       // invalid UTF-8
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			id, err := ParseID(json.RawMessage(tc.raw))
			if tc.want == nil {
				if err == nil || !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("ParseID(%s) = %v, %v; want an ErrInvalidID saying %q", tc.raw, id.Raw(), err, tc.msg)
				}
				return
			}
			if err != nil || id.Raw() != tc.want {
				t.Fatalf("ParseID(%s) = %#v, %v; want %#v", tc.raw, id.Raw(), err, tc.want)
			}
		})
	}
}

func TestRequestID_EchoedByteForByte(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\u0041<b>&\/","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\ud83d\ude00 caf\u00e9","method":"ping"}`,
		`{"jsonrpc":"2.0", "id" : 7 ,"method":"ping"}`,
	} {
		msg, raw, err := DecodeWithID([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		req := msg.(*jsonrpc.Request)
		want := strings.TrimSpace(string(raw))
		for _, resp := range []*jsonrpc.Response{
			{ID: req.ID, Result: json.RawMessage(`{"ok":true}`)},
			{ID: req.ID, Error: &jsonrpc.Error{Code: -32602, Message: "bad <args>"}},
		} {
			out, err := EncodeResponseAs(resp, raw)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(out, &back); err != nil || string(back.ID) != want {
				t.Fatalf("%s: answered %s, want id %s", in, out, want)
			}
			// And it decodes back to the same id.
			if back, err := Decode(out); err != nil || back.(*jsonrpc.Response).ID != req.ID {
				t.Fatalf("%s: %s does not decode back: %v", in, out, err)
			}
		}
	}
}
