package handler_test

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

const initBody20250326 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`

// initialize20250326 opens a session of the one protocol version that has
// batches.
func (g *gw) initialize20250326() string {
	g.t.Helper()
	r := g.do(req{body: initBody20250326})
	if r.status != http.StatusOK || r.rpc.Error != nil {
		g.t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	return r.header.Get("Mcp-Session-Id")
}

func TestBatch_RequestsAnsweredInOrderAsOneArray(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize20250326()
	body := `[
		{"jsonrpc":"2.0","method":"notifications/initialized"},
		{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"second"}}},
		{"jsonrpc":"2.0","id":7,"method":"tools/list"},
		{"jsonrpc":"2.0","id":8,"method":"no/such/method"}
	]`
	r := g.do(req{body: body, session: sid, headers: map[string]string{"Mcp-Protocol-Version": "2025-03-26"}})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var out []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct{ Code int64 }
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil {
		t.Fatalf("not a JSON array: %v: %s", err, r.body)
	}
	if len(out) != 3 || out[0].ID != "b" || out[1].ID != float64(7) || out[2].ID != float64(8) {
		t.Fatalf("responses %s, want ids b, 7, 8 in order", r.body)
	}
	if !strings.Contains(string(out[0].Result), "second") || !strings.Contains(string(out[1].Result), "gateway-two-echo") {
		t.Fatalf("results %s", r.body)
	}
	if out[2].Error == nil || out[2].Error.Code != -32601 {
		t.Fatalf("unknown method in a batch: %s", r.body)
	}
}

func TestBatch_SSEOnlyClientGetsOneEventPerResponse(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize20250326()
	body := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	r := g.do(req{body: body, session: sid, headers: map[string]string{"Accept": "text/event-stream"}})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var ids []string
	for _, line := range strings.Split(r.body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var m struct{ ID json.RawMessage }
			_ = json.Unmarshal([]byte(d), &m)
			ids = append(ids, string(m.ID))
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"1", "2"}) {
		t.Fatalf("events for ids %v, want 1 and 2: %s", ids, r.body)
	}
}

func TestBatch_BadBatchesGetClearErrors(t *testing.T) {
	g := startGateway(t, gwOptions{})
	old := g.initialize20250326()
	current := g.initialize("alice", "demo")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	cases := []struct {
		name, session, body string
		status              int
		code                int64
		contains            string
	}{
		{"empty", old, `[]`, 400, -32600, "empty"},
		{"malformed", old, `[` + ping + `,`, 400, -32700, "JSON"},
		{"bad element", old, `[` + ping + `,{"jsonrpc":"2.0","id":2}]`, 400, -32600, "batch element 1"},
		{"nested", old, `[[` + ping + `]]`, 400, -32600, "nest"},
		{"initialize inside", old, `[` + initBody20250326 + `]`, 400, -32600, "initialize"},
		{"later protocol version", current, `[` + ping + `]`, 400, -32600, "2025-03-26"},
		{"unknown session", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", `[` + ping + `]`, 404, -32001, "session"},
		{"answer nobody waits for", old, `[{"jsonrpc":"2.0","id":"mcpgw-s-x","result":{}}]`, 400, -32600, "mcpgw-s-x"},
		{"notifications only", old, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 202, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: tc.body, session: tc.session})
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != 0 && (r.rpc.Error == nil || r.rpc.Error.Code != tc.code || !strings.Contains(r.rpc.Error.Message, tc.contains)) {
				t.Fatalf("body %s: want error %d containing %q", r.body, tc.code, tc.contains)
			}
		})
	}
}

// Protocol 2026-07-28 has no batches and no session: a batch sent as that
// revision (its MCP-Protocol-Version, or its elements' _meta) gets 400
// -32600 saying so, not "missing Mcp-Session-Id", and nothing runs.
func TestBatch_ModernBatchIsRefusedAsNotPartOfTheRevision(t *testing.T) {
	g := startGateway(t, gwOptions{})
	list := modernBody(1, "tools/list", "", okMeta)
	call := modernBody(2, "tools/call", `{"name":"gateway-one-echo","arguments":{"text":"x"}}`, okMeta)
	old := g.initialize20250326()
	cases := []struct {
		name, body, session string
		headers             map[string]string
	}{
		{"version header", `[` + list + `,` + call + `]`, "", modernHeaders("tools/list")},
		{"version header, a session's batch otherwise", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", map[string]string{"MCP-Protocol-Version": "2026-07-28"}},
		{"version header on a 2025-03-26 session", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, old, map[string]string{"MCP-Protocol-Version": "2026-07-28"}},
		{"_meta only", `[` + list + `]`, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: tc.body, session: tc.session, headers: tc.headers})
			if r.status != http.StatusBadRequest || r.rpc.Error == nil || r.rpc.Error.Code != -32600 ||
				!strings.Contains(r.rpc.Error.Message, "batches are not part of protocol 2026-07-28") {
				t.Fatalf("%d %s: want 400 -32600 saying batches are not part of 2026-07-28", r.status, r.body)
			}
		})
	}
	if n := g.one.Count("tools/call") + g.one.Count("tools/list"); n != 0 {
		t.Fatalf("a refused batch reached a backend %d times", n)
	}
}

// Each routed call of a batch has an audit line of its own (the batch's
// request has none, and neither do its lists).
func TestBatch_EachRoutedCallIsAudited(t *testing.T) {
	g := startGateway(t, gwOptions{audit: true})
	sid := g.initialize20250326()
	body := `[
		{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"a"}}},
		{"jsonrpc":"2.0","id":2,"method":"tools/list"},
		{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway-two-nope"}}
	]`
	if r := g.do(req{body: body, session: sid, headers: map[string]string{"Mcp-Protocol-Version": "2025-03-26"}}); r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(g.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d audit lines for a batch of two calls and a list:\n%s", len(lines), data)
	}
	byName := map[string]map[string]any{}
	for _, l := range lines {
		byName[l["name"].(string)] = l
	}
	if l := byName["gateway-one-echo"]; l["outcome"] != "ok" || l["principal"] != "alice" || l["session_hash"] == nil || l["backend"] != "gateway-one" {
		t.Errorf("the echo's line: %v", l)
	}
	if l := byName["gateway-two-nope"]; l["outcome"] != "error" || l["code"] != float64(-32602) {
		t.Errorf("the unknown tool's line: %v", l)
	}
}
