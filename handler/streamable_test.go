package handler_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestTransport_StatusCodesAndErrors(t *testing.T) {
	g := startGateway(t, gwOptions{maxBody: 1024, origins: []string{"https://app.example"}, hosts: []string{"127.0.0.1", "localhost"}})
	sid := g.initialize("alice", "demo")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	cases := []struct {
		name     string
		r        req
		status   int
		code     int64 // JSON-RPC error code in the body; 0 = none expected
		contains string
	}{
		{"missing session id", req{body: list}, 400, -32600, "Mcp-Session-Id"},
		{"unknown session", req{body: list, session: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, 404, -32001, "session not found"},
		{"other principal", req{body: list, session: sid, sub: "mallory"}, 404, -32001, "session not found"},
		{"other vhost", req{body: list, session: sid, path: "/servers/other/mcp"}, 404, -32001, "session not found"},
		{"unknown vhost", req{body: list, session: sid, path: "/servers/nope/mcp"}, 404, -32600, "virtual host"},
		{"unsupported protocol version", req{body: list, session: sid, headers: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}}, 400, -32022, "1999-01-01"}, // -32022 with the supported versions, both generations
		{"foreign host", req{body: list, session: sid, headers: map[string]string{"Host": "evil.example"}}, 403, -32600, "host"},
		{"foreign origin", req{body: list, session: sid, headers: map[string]string{"Origin": "https://evil.example"}}, 403, -32600, "origin"},
		{"no token", req{body: list, session: sid, sub: "-"}, 401, 0, ""},
		{"body too large", req{body: `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2048) + `"}}`, session: sid}, 413, -32600, "size limit"},
		{"malformed json", req{body: `{"jsonrpc":`, session: sid}, 400, -32700, "JSON"},
		{"batch", req{body: `[` + list + `]`, session: sid}, 400, -32600, "batch"},
		{"not a message", req{body: `{"jsonrpc":"2.0","id":3}`, session: sid}, 400, -32600, "invalid"},
		{"wrong content type", req{body: list, session: sid, headers: map[string]string{"Content-Type": "text/plain"}}, 415, -32600, "Content-Type"},
		{"unacceptable accept", req{body: list, session: sid, headers: map[string]string{"Accept": "text/html"}}, 406, -32600, "Accept"},
		{"GET needs text/event-stream", req{method: "GET", session: sid, headers: map[string]string{"Accept": "application/json"}}, 406, -32600, "text/event-stream"},
		{"GET needs a session", req{method: "GET", headers: map[string]string{"Accept": "text/event-stream"}}, 400, -32600, "Mcp-Session-Id"},
		{"GET with malformed Last-Event-ID", req{method: "GET", session: sid, headers: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "not-an-id"}}, 400, -32600, "Last-Event-ID"},
		{"GET resuming a call with a malformed id", req{method: "GET", session: sid, headers: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "cabc_nope"}}, 400, -32600, "Last-Event-ID"},
		{"response for an id nobody waits for", req{body: `{"jsonrpc":"2.0","id":"mcpgw-s-nobody","result":{}}`, session: sid}, 400, -32600, "mcpgw-s-nobody"},
		{"PUT", req{method: "PUT", session: sid}, 405, -32600, ""},
		{"initialize notification", req{body: `{"jsonrpc":"2.0","method":"initialize","params":{}}`}, 400, -32600, "id"},
		{"initialize without version", req{body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`}, 200, -32602, "protocolVersion"},
		{"unknown method", req{body: `{"jsonrpc":"2.0","id":4,"method":"frobnicate"}`, session: sid}, 200, -32601, "frobnicate"},
		{"same origin passes", req{body: list, session: sid, headers: map[string]string{"Host": "localhost:1234", "Origin": "http://localhost:1234"}}, 200, 0, "tools"},
		{"same host other port is another origin", req{body: list, session: sid, headers: map[string]string{"Host": "localhost:1234", "Origin": "http://localhost:9999"}}, 403, -32600, "origin"},
		{"allowed origin passes", req{body: list, session: sid, headers: map[string]string{"Origin": "https://app.example"}}, 200, 0, "tools"},
		{"notification accepted", req{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session: sid}, 202, 0, ""},
		{"cancel for an unknown request accepted", req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`, session: sid}, 202, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(tc.r)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tc.status, r.body)
			}
			if tc.code != 0 {
				if r.rpc.Error == nil || r.rpc.Error.Code != tc.code {
					t.Fatalf("body %s: want JSON-RPC error %d", r.body, tc.code)
				}
			}
			if tc.contains != "" && !strings.Contains(r.body, tc.contains) {
				t.Fatalf("body %s does not mention %q", r.body, tc.contains)
			}
		})
	}
}

func TestTransport_BadTokenIs401WithBearerChallenge(t *testing.T) {
	g := startGateway(t, gwOptions{})
	r := g.do(req{body: initBody, sub: "-", headers: map[string]string{"Authorization": "Bearer not.a.jwt"}})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d", r.status)
	}
	if h := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
		t.Fatalf("WWW-Authenticate = %q", h)
	}
	if strings.Contains(r.body, "not.a.jwt") || strings.Contains(r.header.Get("WWW-Authenticate"), "not.a.jwt") {
		t.Fatal("the token is echoed back")
	}
}

func TestTransport_DeleteEndsSessionEverywhere(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	if r := g.do(req{method: "DELETE", session: sid, sub: "mallory"}); r.status != 404 {
		t.Fatalf("DELETE by another principal: %d, want 404", r.status)
	}
	if r := g.do(req{method: "DELETE", session: sid}); r.status != 200 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if r := g.do(req{body: `{"jsonrpc":"2.0","id":2,"method":"ping"}`, session: sid}); r.status != 404 {
		t.Fatalf("request after DELETE: %d, want 404", r.status)
	}
	if r := g.do(req{method: "DELETE", session: sid}); r.status != 404 {
		t.Fatalf("second DELETE: %d, want 404", r.status)
	}
	n, err := redisSrv.Client().Keys(t.Context(), "*"+sid+"*").Result()
	if err != nil || len(n) != 0 {
		t.Fatalf("keys left after DELETE: %v %v", n, err)
	}
}

func TestTransport_AnswersSSEWhenOnlySSEAccepted(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	r := g.do(req{body: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, session: sid, headers: map[string]string{"Accept": "text/event-stream"}})
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content-type %q", r.status, r.header.Get("Content-Type"))
	}
	if !strings.Contains(r.body, "event: message") || r.rpc.Error != nil || len(r.rpc.Result) == 0 {
		t.Fatalf("SSE body %q", r.body)
	}
}

func TestTransport_SessionIDsAreUniqueAndOpaque(t *testing.T) {
	g := startGateway(t, gwOptions{})
	seen := map[string]bool{}
	for range 5 {
		sid := g.initialize("alice", "demo")
		if seen[sid] {
			t.Fatalf("session id %q issued twice", sid)
		}
		seen[sid] = true
		for _, c := range sid {
			if c < 0x21 || c > 0x7e {
				t.Fatalf("session id %q has a non-visible character", sid)
			}
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	g := startGateway(t, gwOptions{})
	for _, p := range []string{"/healthz", "/readyz"} {
		r := g.do(req{method: "GET", path: p, sub: "-"})
		if r.status != 200 {
			t.Fatalf("%s: %d", p, r.status)
		}
	}
}
