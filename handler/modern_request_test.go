package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// modernBody is a 2026-07-28 request: method, params (without _meta) and
// the _meta to put in them.
func modernBody(id int, method, params, meta string) string {
	if params == "" {
		params = "{}"
	}
	p := strings.TrimSuffix(strings.TrimSpace(params), "}")
	if strings.TrimSpace(p) != "{" {
		p += ","
	}
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + p + `"_meta":` + meta + `}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

const okMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// modernHeaders are the headers a conforming client sends with method.
func modernHeaders(method string) map[string]string {
	return map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

func with(h map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// A 2026-07-28 request is told apart by its _meta and checked before any
// backend is asked: the revision's codes with their HTTP statuses.
func TestModern_TransportRefusals(t *testing.T) {
	g := startGateway(t, gwOptions{})
	call := `{"name":"gateway-one-echo","arguments":{"text":"x"}}`
	for _, tc := range []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		code    int64
		says    string
	}{
		{"version header missing", modernBody(1, "tools/list", "", okMeta), map[string]string{"Mcp-Method": "tools/list"},
			400, -32020, "MCP-Protocol-Version header is required"},
		{"version header and _meta differ", modernBody(2, "tools/list", "", `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`),
			modernHeaders("tools/list"), 400, -32020, "does not match"},
		{"unsupported version", modernBody(3, "server/discover", "", `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`),
			with(modernHeaders("server/discover"), "MCP-Protocol-Version", "v999.0.0"), 400, -32022, "unsupported protocol version"},
		{"no client capabilities", modernBody(4, "server/discover", "", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`),
			modernHeaders("server/discover"), 400, -32602, "clientCapabilities"},
		{"_meta without a version", modernBody(5, "server/discover", "", `{"io.modelcontextprotocol/clientCapabilities":{}}`),
			modernHeaders("server/discover"), 400, -32602, "protocolVersion"},
		{"bad log level", modernBody(6, "tools/list", "", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}`),
			modernHeaders("tools/list"), 400, -32602, "log level"},
		{"Mcp-Method missing", modernBody(7, "tools/list", "", okMeta), map[string]string{"MCP-Protocol-Version": "2026-07-28"},
			400, -32020, "Mcp-Method"},
		{"Mcp-Method differs", modernBody(8, "tools/list", "", okMeta), modernHeaders("prompts/list"), 400, -32020, "Mcp-Method"},
		{"Mcp-Method in another case", modernBody(9, "tools/list", "", okMeta), modernHeaders("TOOLS/LIST"), 400, -32020, "Mcp-Method"},
		{"Mcp-Name missing", modernBody(10, "tools/call", call, okMeta), modernHeaders("tools/call"), 400, -32020, "Mcp-Name"},
		{"Mcp-Name differs", modernBody(11, "tools/call", call, okMeta), with(modernHeaders("tools/call"), "Mcp-Name", "gateway-one-add"),
			400, -32020, "does not match"},
		{"Mcp-Name bad Base64", modernBody(12, "tools/call", call, okMeta), with(modernHeaders("tools/call"), "Mcp-Name", "=?base64?Z2F0!?="),
			400, -32020, "Base64"},
		{"initialize is gone", modernBody(13, "initialize", `{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`, okMeta),
			modernHeaders("initialize"), 404, -32601, "not part of protocol"},
		{"ping is gone", modernBody(14, "ping", "", okMeta), modernHeaders("ping"), 404, -32601, ""},
		{"logging/setLevel is gone", modernBody(15, "logging/setLevel", `{"level":"debug"}`, okMeta), modernHeaders("logging/setLevel"), 404, -32601, ""},
		{"resources/subscribe is gone", modernBody(16, "resources/subscribe", `{"uri":"gateway-one-test://counter"}`, okMeta),
			modernHeaders("resources/subscribe"), 404, -32601, ""},
		{"unknown method", modernBody(17, "unknown/method", "", okMeta), modernHeaders("unknown/method"), 404, -32601, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: tc.body, headers: tc.headers})
			if r.status != tc.status || r.rpc.Error == nil || r.rpc.Error.Code != tc.code || !strings.Contains(r.rpc.Error.Message, tc.says) {
				t.Fatalf("got %d %s; want %d with %d saying %q", r.status, r.body, tc.status, tc.code, tc.says)
			}
			if r.rpc.ID == nil {
				t.Fatalf("error %s does not echo the request id", r.body)
			}
		})
	}
	if n := g.one.Count("tools/call") + g.one.Count("tools/list"); n != 0 {
		t.Fatalf("refused requests reached a backend %d times", n)
	}
}

// -32022 names what the gateway speaks, both generations, and what was asked.
func TestModern_UnsupportedVersionSaysWhatIsSupported(t *testing.T) {
	g := startGateway(t, gwOptions{})
	r := g.do(req{body: modernBody(1, "server/discover", "", `{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}`),
		headers: with(modernHeaders("server/discover"), "MCP-Protocol-Version", "v999.0.0")})
	var e struct {
		Error struct {
			Data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatal(err)
	}
	d := e.Error.Data
	if d.Requested != "v999.0.0" || len(d.Supported) == 0 || d.Supported[0] != "2026-07-28" || !contains(d.Supported, "2025-11-25") {
		t.Fatalf("data %+v: want requested v999.0.0 and both generations supported", d)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A modern notification needs no session and gets 202.
func TestModern_NotificationIsAccepted(t *testing.T) {
	g := startGateway(t, gwOptions{})
	body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":` + okMeta + `}}`
	if r := g.do(req{body: body, headers: modernHeaders("notifications/cancelled")}); r.status != http.StatusAccepted {
		t.Fatalf("got %d %s, want 202", r.status, r.body)
	}
}
