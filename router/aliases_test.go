package router

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/gateway/router/upstream"
)

// Pure: the routing table is compiled from config and no request is made,
// so nothing here touches Redis or a backend.

func aliasVHost(t *testing.T) *vhost {
	t.Helper()
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"gateway-one": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"},
			ToolNameAliases: map[string]string{"Public.Tool": "get_stats", "gateway-two-shadow": "echo"}},
		"gateway-two": {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}},
	}}})
	t.Cleanup(table.close)
	return table.vhosts["v"]
}

func TestAliases_ResolveBeforeThePrefix(t *testing.T) {
	v := aliasVHost(t)
	r := &Router{}
	for _, tc := range []struct {
		name, backend, tool string
	}{
		{"Public.Tool", "gateway-one", "get_stats"},           // exactly as written: case, dots
		{"gateway-one-get_stats", "gateway-one", "get_stats"}, // an aliased tool keeps its prefixed name
		{"gateway-two-shadow", "gateway-one", "echo"},         // the alias wins over gateway-two's prefix
		{"gateway-two-echo", "gateway-two", "echo"},
	} {
		params, _ := json.Marshal(map[string]any{"name": tc.name})
		got, err := r.calls.resolve(v, "tools/call", params)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var sent string
		_ = json.Unmarshal(got.params["name"], &sent)
		if got.backend != tc.backend || got.name != tc.tool || sent != tc.tool || got.public != tc.name {
			t.Errorf("%s routed to %s/%s (sent %q), want %s/%s", tc.name, got.backend, got.name, sent, tc.backend, tc.tool)
		}
	}
	for _, unknown := range []string{"public.tool", "Public.Tool2", "get_stats"} {
		params, _ := json.Marshal(map[string]any{"name": unknown})
		if _, err := r.calls.resolve(v, "tools/call", params); err == nil || err.Code != CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", unknown, err)
		}
	}
}

func TestAliases_AdvertisedForTheirTool(t *testing.T) {
	v := aliasVHost(t)
	for _, tc := range []struct {
		backend, tool, alias string
		ok                   bool
	}{
		{"gateway-one", "get_stats", "Public.Tool", true},
		{"gateway-one", "echo", "gateway-two-shadow", true},
		{"gateway-two", "echo", "", false}, // aliases belong to one backend's tools
		{"gateway-one", "increment", "", false},
	} {
		alias, ok := v.aliases.Advertised(tc.backend, tc.tool)
		if alias != tc.alias || ok != tc.ok {
			t.Errorf("advertised(%s, %s) = %q, %v; want %q, %v", tc.backend, tc.tool, alias, ok, tc.alias, tc.ok)
		}
	}
}
