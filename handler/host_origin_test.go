package handler_test

import "testing"

// An origin is scheme, host and port: a page served over plain HTTP is
// not the origin of the gateway reached over HTTPS, and the reverse.
func TestOrigin_SameOriginNeedsTheSameScheme(t *testing.T) {
	g := startGateway(t, gwOptions{origins: []string{"https://app.example"}})
	sid := g.initialize("alice", "demo")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	cases := []struct {
		name, origin, forwardedProto string
		status                       int
	}{
		{"http page, http gateway", "http://localhost:1234", "", 200},
		{"https page, http gateway", "https://localhost:1234", "", 403},
		{"https page, https behind a proxy", "https://localhost:1234", "https", 200},
		{"http page, https behind a proxy", "http://localhost:1234", "https", 403},
		{"https page, proxy list names https first", "https://localhost:1234", "https, http", 200},
		{"scheme compared without case", "HTTPS://localhost:1234", "HTTPS", 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"Host": "localhost:1234", "Origin": tc.origin}
			if tc.forwardedProto != "" {
				h["X-Forwarded-Proto"] = tc.forwardedProto
			}
			if r := g.do(req{body: list, session: sid, headers: h}); r.status != tc.status {
				t.Fatalf("Origin %s, X-Forwarded-Proto %q: status %d, want %d: %.200s", tc.origin, tc.forwardedProto, r.status, tc.status, r.body)
			}
		})
	}
}

// A refused Host is named in the 403, with where to allow it: through a
// port-forward or a new ingress name the cause is otherwise a guess.
func TestHost_RefusalNamesTheHost(t *testing.T) {
	g := startGateway(t, gwOptions{hosts: []string{"mcpgw"}})
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	r := g.do(req{body: list, headers: map[string]string{"Host": "127.0.0.1:8080"}})
	if r.status != 403 || r.rpc.Error == nil || r.rpc.Error.Message != `host not allowed: "127.0.0.1:8080" is not on the config's allowed_hosts (add it, or send a Host header that is)` {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	if r := g.do(req{body: list, headers: map[string]string{"Host": "mcpgw:8080"}}); r.status == 403 {
		t.Fatalf("an allowed host was refused: %s", r.body)
	}
}
