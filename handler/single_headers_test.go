package handler_test

import (
	"cmp"
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
		body                 string // default: list
	}{
		{"two session ids", http.MethodPost, "Mcp-Session-Id", []string{sid, other}, ""},
		{"the same session id twice", http.MethodPost, "Mcp-Session-Id", []string{sid, sid}, ""},
		{"two protocol versions", http.MethodPost, "MCP-Protocol-Version", []string{"2025-11-25", "2025-03-26"}, ""},
		{"two protocol versions on a batch", http.MethodPost, "MCP-Protocol-Version", []string{"2025-03-26", "2025-03-26"}, "[" + list + "]"},
		{"two protocol versions on DELETE", http.MethodDelete, "MCP-Protocol-Version", []string{"2025-11-25", "2025-11-25"}, ""},
		{"two session ids on DELETE", http.MethodDelete, "Mcp-Session-Id", []string{sid, other}, ""},
		{"two session ids on GET", http.MethodGet, "Mcp-Session-Id", []string{sid, other}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hr, _ := http.NewRequestWithContext(t.Context(), tc.method, g.url+"/servers/demo/mcp", strings.NewReader(cmp.Or(tc.body, list)))
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

// On a 2026-07-28 request every header of its transport (MCP-Protocol-
// Version, Mcp-Method, Mcp-Name, Mcp-Param-*) is sent once: a second one,
// whatever its value, is 400 -32020 naming it, before any backend sees the
// request. First-wins would let an intermediary that reads the last one
// route or check a request the gateway reads differently.
func TestHeaders_ModernTransportHeaderTwiceIs400(t *testing.T) {
	g := startGateway(t, gwOptions{})
	call := modernBody(1, "tools/call", `{"name":"gateway-one-echo","arguments":{"text":"x"}}`, okMeta)
	cases := []struct {
		name, body, header string
		values             []string
	}{
		{"Mcp-Method twice, equal", call, "Mcp-Method", []string{"tools/call", "tools/call"}},
		{"Mcp-Method twice, different", call, "Mcp-Method", []string{"tools/call", "tools/list"}},
		{"Mcp-Name twice, equal", call, "Mcp-Name", []string{"gateway-one-echo", "gateway-one-echo"}},
		{"Mcp-Name twice, different", call, "Mcp-Name", []string{"gateway-one-echo", "gateway-one-add"}},
		{"Mcp-Param-* twice", call, "Mcp-Param-Region", []string{"eu", "eu"}},
		{"MCP-Protocol-Version twice, equal", call, "MCP-Protocol-Version", []string{"2026-07-28", "2026-07-28"}},
		{"MCP-Protocol-Version twice, a session version first", call, "MCP-Protocol-Version", []string{"2025-11-25", "2026-07-28"}},
		{"MCP-Protocol-Version twice, both session versions", call, "MCP-Protocol-Version", []string{"2025-11-25", "2025-11-25"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hr, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url+"/servers/demo/mcp", strings.NewReader(tc.body))
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Accept", "application/json, text/event-stream")
			hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
			for k, v := range with(modernHeaders("tools/call"), "Mcp-Name", "gateway-one-echo") {
				if !strings.EqualFold(k, tc.header) {
					hr.Header.Set(k, v)
				}
			}
			for _, v := range tc.values {
				hr.Header.Add(tc.header, v)
			}
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"code":-32020`) ||
				!strings.Contains(strings.ToLower(string(body)), strings.ToLower("more than one "+tc.header+" header")) {
				t.Fatalf("%d %s: want 400 -32020 naming %s", res.StatusCode, body, tc.header)
			}
		})
	}
	if n := g.one.Count("tools/call"); n != 0 {
		t.Fatalf("refused requests reached the backend %d times", n)
	}
	// A notification gets a status only.
	note := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":` + okMeta + `}}`
	hr, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.url+"/servers/demo/mcp", strings.NewReader(note))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("MCP-Protocol-Version", "2026-07-28")
	hr.Header.Add("Mcp-Method", "notifications/cancelled")
	hr.Header.Add("Mcp-Method", "notifications/cancelled")
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("notification with two Mcp-Method headers: %d, want 400", res.StatusCode)
	}
}
