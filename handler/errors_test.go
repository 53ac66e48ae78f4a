package handler_test

import (
	"net/http"
	"testing"
)

// A client must tell "get a token" (401) from "start a new session" (404)
// by the JSON-RPC code too, not only by the HTTP status: they differ, and
// 404 keeps -32001, the code MCP SDKs know.
func TestErrorCodes_UnauthorizedIsNotSessionNotFound(t *testing.T) {
	g := startGateway(t, gwOptions{})
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	cases := []struct {
		name   string
		r      req
		status int
		code   int64
	}{
		{"no token", req{body: list, sub: "-"}, http.StatusUnauthorized, -32010},
		{"bad token", req{body: list, sub: "-", headers: map[string]string{"Authorization": "Bearer not.a.jwt"}}, http.StatusUnauthorized, -32010},
		{"unknown session", req{body: list, session: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, http.StatusNotFound, -32001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(tc.r)
			if r.status != tc.status || r.rpc.Error == nil || r.rpc.Error.Code != tc.code {
				t.Fatalf("status %d body %s: want %d with JSON-RPC code %d", r.status, r.body, tc.status, tc.code)
			}
		})
	}
}
