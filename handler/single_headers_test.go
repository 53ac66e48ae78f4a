package handler_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHeaders_TransportHeaderTwiceIs400(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	other := g.initialize("alice", "demo")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	cases := []struct {
		name, method, header string
		values               []string
	}{
		{"two session ids", http.MethodPost, "Mcp-Session-Id", []string{sid, other}},
		{"the same session id twice", http.MethodPost, "Mcp-Session-Id", []string{sid, sid}},
		{"two protocol versions", http.MethodPost, "MCP-Protocol-Version", []string{"2025-11-25", "2025-03-26"}},
		{"two session ids on DELETE", http.MethodDelete, "Mcp-Session-Id", []string{sid, other}},
		{"two session ids on GET", http.MethodGet, "Mcp-Session-Id", []string{sid, other}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hr, _ := http.NewRequestWithContext(t.Context(), tc.method, g.url+"/servers/demo/mcp", strings.NewReader(list))
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Accept", "application/json, text/event-stream")
			hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
			if tc.header != "Mcp-Session-Id" {
				hr.Header.Set("Mcp-Session-Id", sid)
			}
			for _, v := range tc.values {
				hr.Header.Add(tc.header, v)
			}
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", res.StatusCode) // body unread: a GET that passed is a stream
			}
			body, _ := io.ReadAll(res.Body)
			if !strings.Contains(string(body), `"code":-32600`) || !strings.Contains(strings.ToLower(string(body)), strings.ToLower("more than one "+tc.header)) {
				t.Fatalf("body %s: want -32600 naming %s", body, tc.header)
			}
		})
	}
	// The sessions are untouched: the DELETE did not run.
	if r := g.do(req{body: list, session: other}); r.status != 200 {
		t.Fatalf("session after the refused DELETE: %d", r.status)
	}
}
