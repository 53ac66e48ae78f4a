package handler_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// The refusals a newcomer meets first say what was expected and where to
// fix it: the answer names the value sent and the config setting, the
// request's log line (at info) what the config holds, and a 401's line
// its reason class and detail, which the audit record and the challenge
// carry too.
func TestFirstRefusals_SayWhatWasExpected(t *testing.T) {
	logs := &testsupport.SyncBuffer{}
	g := startGateway(t, gwOptions{origins: []string{"https://app.example"}, hosts: []string{"127.0.0.1", "localhost"},
		audit: true, log: slog.New(slog.NewJSONHandler(logs, nil))})
	sid := g.initialize("alice", "demo")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`
	wrongAud := testsupport.StdClaims("alice")
	wrongAud["aud"] = "another-api"
	badToken := testsupport.MintJWT(t, jwtSecret, wrongAud)

	cases := []struct {
		name   string
		r      req
		status int
		code   int64
		body   []string          // in the JSON-RPC error message
		log    map[string]string // attributes of the request's log line
	}{
		{"unknown vhost", req{body: list, session: sid, path: "/servers/nope/mcp"}, 404, -32600,
			[]string{`unknown virtual host "nope"`, "virtual_hosts", "GET /status"}, map[string]string{"detail": "configured virtual hosts: demo, other"}},
		{"foreign origin", req{body: list, session: sid, headers: map[string]string{"Origin": "https://evil.example"}}, 403, -32600,
			[]string{`origin not allowed: "https://evil.example"`, "allowed_origins"}, map[string]string{"detail": "allowed_origins: https://app.example"}},
		{"foreign host", req{body: list, session: sid, headers: map[string]string{"Host": "evil.example"}}, 403, -32600,
			[]string{`"evil.example"`, "allowed_hosts"}, map[string]string{"detail": "allowed_hosts: 127.0.0.1, localhost"}},
		{"missing session", req{body: list}, 400, -32600,
			[]string{"missing Mcp-Session-Id header", "send initialize first"}, nil},
		{"unknown session", req{body: list, session: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, 404, -32001,
			[]string{"session not found", "Mcp-Session-Id", "session_ttl", "expired", "deleted", "initialize"},
			map[string]string{"detail": "no such session in the store (expired, deleted, or another store)"}},
		{"another principal's session", req{body: list, session: sid, sub: "mallory"}, 404, -32001,
			[]string{"session not found"}, map[string]string{"detail": "the session belongs to another principal"}},
		{"no token", req{body: call, session: sid, sub: "-", headers: map[string]string{"Authorization": ""}}, 401, -32010,
			[]string{"bearer token required"}, map[string]string{"auth_reason": "no_token", "auth_detail": "no Authorization header"}},
		{"wrong audience", req{body: call, session: sid, sub: "-", headers: map[string]string{"Authorization": "Bearer " + badToken}}, 401, -32010,
			[]string{"audience: the token audience is not accepted"},
			map[string]string{"auth_reason": "audience", "auth_detail": `token aud "another-api" holds none of the accepted audiences ["mcpgateway-api"]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from := len(logs.String())
			r := g.do(c.r)
			if r.status != c.status || r.rpc.Error == nil || r.rpc.Error.Code != c.code {
				t.Fatalf("status %d body %s, want %d with code %d", r.status, r.body, c.status, c.code)
			}
			for _, w := range c.body {
				if !strings.Contains(r.rpc.Error.Message, w) {
					t.Errorf("message %q lacks %q", r.rpc.Error.Message, w)
				}
			}
			line := requestLine(t, logs, from)
			if line["level"] != "INFO" {
				t.Errorf("log line at %v, want INFO: %v", line["level"], line)
			}
			for k, v := range c.log {
				if line[k] != v {
					t.Errorf("log %s = %v, want %q", k, line[k], v)
				}
			}
			if strings.Contains(logs.String(), badToken) {
				t.Error("the log holds the token")
			}
		})
	}

	// The challenge: no error for no token (RFC 6750 §3.1), the class and
	// its description for a bad one; the audit's reason is the class.
	noTok := g.do(req{body: call, session: sid, sub: "-"})
	if ch := noTok.header.Get("WWW-Authenticate"); ch != `Bearer realm="mcpgw"` {
		t.Errorf("no token: challenge %q", ch)
	}
	bad := g.do(req{body: call, session: sid, sub: "-", headers: map[string]string{"Authorization": "Bearer " + badToken}})
	if ch := bad.header.Get("WWW-Authenticate"); ch != `Bearer realm="mcpgw", error="invalid_token", error_description="audience: the token audience is not accepted by this resource"` {
		t.Errorf("wrong audience: challenge %q", ch)
	}
	var data []byte
	reasons := map[string]int{}
	testsupport.Eventually(t, 5*time.Second, func() bool { // each line is written once its answer is out
		if err := g.audit.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
		var err error
		if data, err = os.ReadFile(g.auditPath); err != nil {
			t.Fatal(err)
		}
		clear(reasons)
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["outcome"] == "unauthenticated" {
				reasons[fmt.Sprint(m["reason"])]++
			}
		}
		return reasons["no_token"]+reasons["audience"] >= 4
	})
	if reasons["no_token"] != 2 || reasons["audience"] != 2 || len(reasons) != 2 {
		t.Errorf("audit reasons of the 401s: %v, want no_token and audience twice each", reasons)
	}
	if strings.Contains(string(data), badToken) {
		t.Error("the audit holds the token")
	}
}

// requestLine is the first "request" line of a JSON log written after
// byte from: the line is written once the answer is out, so it may come
// just after the client has read it.
func requestLine(t *testing.T, logs *testsupport.SyncBuffer, from int) map[string]any {
	t.Helper()
	var line map[string]any
	testsupport.Eventually(t, 5*time.Second, func() bool {
		for _, l := range strings.Split(logs.String()[from:], "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
				line = m
				return true
			}
		}
		return false
	})
	if line == nil {
		t.Fatalf("no request line in the log:\n%s", logs.String()[from:])
	}
	return line
}
