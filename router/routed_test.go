package router

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/upstream"
)

// resolve, with no backend: which backend and backend-side identifier a
// routed request names, the params the backend gets, and the -32602 for
// each way a request can fail to name one.
func TestResolve(t *testing.T) {
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"gw":     {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}, ToolNameAliases: map[string]string{"Nice": "raw"}},
		"gw-one": {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}},
	}}})
	t.Cleanup(table.close)
	v := table.vhosts["v"]
	r := &Router{}
	for _, c := range []struct {
		method, params        string
		backend, name, public string
		sent                  string // the params the backend gets
	}{
		{"tools/call", `{"name":"gw-one-echo","arguments":{"a":1}}`, "gw-one", "echo", "gw-one-echo", `{"arguments":{"a":1},"name":"echo"}`},
		{"tools/call", `{"name":"gw-echo","arguments":null}`, "gw", "echo", "gw-echo", `{"name":"echo"}`},
		{"tools/call", `{"name":"Nice"}`, "gw", "raw", "Nice", `{"name":"raw"}`},
		{"prompts/get", `{"name":"gw-one-greet","arguments":{"who":"x"}}`, "gw-one", "greet", "gw-one-greet", `{"arguments":{"who":"x"},"name":"greet"}`},
		{"resources/read", `{"uri":"gw-one-file:///a"}`, "gw-one", "file:///a", "gw-one-file:///a", `{"uri":"file:///a"}`},
		{"resources/read", `{"uri":"ui://gw/app.html"}`, "gw", "ui://app.html", "ui://gw/app.html", `{"uri":"ui://app.html"}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"gw-greet"},"argument":{"name":"a","value":"b"}}`, "gw", "greet", "gw-greet",
			`{"argument":{"name":"a","value":"b"},"ref":{"name":"greet","type":"ref/prompt"}}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"gw-one-t://{x}"}}`, "gw-one", "t://{x}", "gw-one-t://{x}", `{"ref":{"type":"ref/resource","uri":"t://{x}"}}`},
	} {
		tg, err := r.calls.resolve(v, c.method, json.RawMessage(c.params))
		if err != nil {
			t.Errorf("%s %s: %v", c.method, c.params, err.Message)
			continue
		}
		sent, _ := json.Marshal(tg.params)
		if tg.backend != c.backend || tg.name != c.name || tg.public != c.public || string(sent) != c.sent {
			t.Errorf("%s %s: %s %q %q sent %s; want %s %q %q sent %s", c.method, c.params, tg.backend, tg.name, tg.public, sent,
				c.backend, c.name, c.public, c.sent)
		}
	}
	for _, c := range []struct{ method, params, says string }{
		{"tools/call", `[]`, "params must be an object"},
		{"tools/call", `{}`, `needs a non-empty string "name"`},
		{"tools/call", `{"name":7}`, `needs a non-empty string "name"`},
		{"tools/call", `{"name":"nobody-x"}`, `unknown tool "nobody-x"`},
		{"tools/call", `{"name":"gwecho"}`, `unknown tool "gwecho"`}, // a key must be followed by "-"
		{"prompts/get", `{"name":""}`, `needs a non-empty string "name"`},
		{"resources/read", `{"uri":"file:///a"}`, `unknown resource "file:///a"`},
		{"completion/complete", `{}`, "needs params.ref"},
		{"completion/complete", `{"ref":{"type":"ref/tool","name":"gw-x"}}`, `unsupported ref type "ref/tool"`},
	} {
		if tg, err := r.calls.resolve(v, c.method, json.RawMessage(c.params)); err == nil || err.Code != CodeInvalidParams || !strings.Contains(err.Message, c.says) {
			t.Errorf("%s %s: %+v %+v, want -32602 saying %q", c.method, c.params, tg, err, c.says)
		}
	}
}
