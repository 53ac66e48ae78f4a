package handler_test

import (
	"strings"
	"testing"
)

// maxErrorMessage bounds an error message that quotes client input: 200
// bytes of the input (wire.MaxQuoted) plus the gateway's own words.
const maxErrorMessage = 400

func TestErrorMessages_QuoteClientInputAtMost200Bytes(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	huge := strings.Repeat("A", 1<<20) // 1 MiB
	cases := []struct {
		name     string
		r        req
		status   int
		code     int64
		contains string
	}{
		{"unknown tool", req{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + huge + `"}}`}, 200, -32602, "unknown tool"},
		{"unknown resource", req{body: `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + huge + `"}}`}, 200, -32602, "unknown resource"},
		{"unknown method", req{body: `{"jsonrpc":"2.0","id":1,"method":"` + huge + `"}`}, 200, -32601, "is not supported"},
		{"unknown log level", req{body: `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"` + huge + `"}}`}, 200, -32602, "log level"},
		{"unsupported ref type", req{body: `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"` + huge + `"},"argument":{"name":"a","value":"b"}}}`}, 200, -32602, "ref type"},
		{"unsupported protocol version", req{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, headers: map[string]string{"Mcp-Protocol-Version": strings.Repeat("9", 16<<10)}}, 400, -32022, "unsupported protocol version"},
		{"answer nobody waits for", req{body: `{"jsonrpc":"2.0","id":"` + huge + `","result":{}}`}, 400, -32600, "no server request"},
		{"bad id", req{body: `{"jsonrpc":"2.0","id":` + strings.Repeat("1", 1<<20) + `.5,"method":"ping"}`}, 400, -32600, "not an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.session = sid
			r := g.do(tc.r)
			if r.status != tc.status || r.rpc.Error == nil || r.rpc.Error.Code != tc.code || !strings.Contains(r.rpc.Error.Message, tc.contains) {
				t.Fatalf("status %d, body %.300s: want %d, %d mentioning %q", r.status, r.body, tc.status, tc.code, tc.contains)
			}
			if n := len(r.body); n > 2*maxErrorMessage+300 {
				t.Fatalf("answer of %d bytes carries the client's input in full: %.300s...", n, r.body)
			}
			if n := len(r.rpc.Error.Message); n > maxErrorMessage {
				t.Fatalf("error message of %d bytes quotes the client's input in full: %.300s...", n, r.rpc.Error.Message)
			}
		})
	}
}

// Decoding errors say which field and what was expected, in JSON terms,
// not encoding/json's text about Go types.
func TestErrorMessages_NameTheFieldNotGoTypes(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	cases := []struct {
		name, body, session, want string
	}{
		{"cursor not a string", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":5}}`, sid, "tools/list: params.cursor must be a string"},
		{"list params not an object", `{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":[1]}`, sid, "prompts/list: params must be an object"},
		{"protocolVersion not a string", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2025}}`, "", "initialize: params.protocolVersion must be a string"},
		{"initialize params not an object", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"x"}`, "", "initialize: params must be an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: tc.body, session: tc.session})
			if r.rpc.Error == nil || r.rpc.Error.Code != -32602 || r.rpc.Error.Message != tc.want {
				t.Fatalf("status %d body %s: want -32602 %q", r.status, r.body, tc.want)
			}
		})
	}
}
