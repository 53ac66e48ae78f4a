package router

import (
	"encoding/json"
	"testing"

	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// The renaming rule, both ways, for every kind of identifier: what a
// backend names is published, and the published identifier routes back
// to the same backend and the same backend identifier.
func TestNaming_RoundTripForEveryKind(t *testing.T) {
	v := offlineVHost(t, "gw", "gw-one", "apps")
	for _, c := range []struct {
		kind, key, id, published string
	}{
		{"tool", "gw", "increment", "gw-increment"},
		{"tool", "gw-one", "increment", "gw-one-increment"}, // longest key first
		{"prompt", "apps", "greet", "apps-greet"},
		{"resource", "gw-one", "test://counter", "gw-one-test://counter"},
		{"resource", "gw", "file:///a b", "gw-file:///a b"},
		{"resource", "apps", "ui://get-time/mcp-app.html", "ui://apps/get-time/mcp-app.html"},
		{"resource", "gw-one", "ui://x", "ui://gw-one/x"},
		{"resource", "gw", "ui://gw-one/x", "ui://gw/gw-one/x"},
	} {
		var published string
		if c.kind == "resource" {
			published = v.publishedURI(c.key, c.id)
		} else {
			published = naming.Prefix(c.key, c.id)
		}
		if published != c.published {
			t.Errorf("%s %q of %s published %q, want %q", c.kind, c.id, c.key, published, c.published)
			continue
		}
		key, id, err := v.route(c.kind, published)
		if err != nil || key != c.key || id != c.id {
			t.Errorf("%s %q routed to %q %q (%v), want %q %q", c.kind, published, key, id, err, c.key, c.id)
		}
	}
	for _, bad := range []string{"ui://", "ui://gw", "ui://gw/", "ui://nobody/x", "ui:/gw/x", "gwx-y"} {
		if key, id, err := v.route("resource", bad); err == nil {
			t.Errorf("resource %q routed to %q %q, want unknown", bad, key, id)
		}
	}
	single := newRoutingTable(map[string]*VirtualHost{"s": {Name: "s", Backends: map[string]*Backend{
		"only": {Config: upstream.Config{URL: "http://127.0.0.1:4/mcp"}}}}})
	t.Cleanup(single.close)
	if got := single.vhosts["s"].publishedURI("only", "ui://app/x.html"); got != "ui://app/x.html" {
		t.Errorf("a single-backend vhost published %q, want it unchanged", got)
	}
}

// capabilities.extensions: Apps, which the gateway routes, is merged from
// the backends (the first backend's settings by key); Tasks only for
// 2026-07-28 (a 2025 session is not told of it yet); unknown extensions
// are dropped, and a client's are dropped the same way before a backend
// hears them.
func TestExtensions_MergedOnlyWhenRouted(t *testing.T) {
	snap := func(key, caps string) *store.BackendSnapshot {
		return &store.BackendSnapshot{Key: key, Capabilities: json.RawMessage(caps)}
	}
	snaps := map[string]*store.BackendSnapshot{
		"b": snap("b", `{"tools":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["b"]},"io.modelcontextprotocol/tasks":{}}}`),
		"a": snap("a", `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["a"]},"com.example/x":{}}}`),
		"c": snap("c", `{"tools":{}}`),
	}
	got, _ := json.Marshal(capability.Merged(snaps, capability.SessionExtensions)["extensions"])
	if string(got) != `{"io.modelcontextprotocol/ui":{"mimeTypes":["a"]}}` {
		t.Fatalf("merged extensions %s, want Apps alone, with backend a's settings", got)
	}
	got, _ = json.Marshal(capability.Merged(snaps, capability.ModernExtensions)["extensions"])
	if string(got) != `{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":{"mimeTypes":["a"]}}` {
		t.Fatalf("2026-07-28 merged extensions %s, want Apps and Tasks", got)
	}
	if _, ok := capability.Merged(map[string]*store.BackendSnapshot{"c": snap("c", `{"tools":{}}`)}, capability.SessionExtensions)["extensions"]; ok {
		t.Fatal("extensions advertised with no backend offering one")
	}
	for in, want := range map[string]string{
		`{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`: `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}},"sampling":{}}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":{}}}`: `{}`,
		`{"roots":{}}`: `{"roots":{}}`,
	} {
		if got := capability.ForwardedClient(json.RawMessage(in), capability.SessionExtensions); string(got) != want {
			t.Errorf("client capabilities %s forwarded as %s, want %s", in, got, want)
		}
	}
}

// A 2025-11-25 task augmentation (params.task) is ignored, as SEP-2663
// says, and never reaches the backend.
func TestExtensions_LegacyTaskParamIgnored(t *testing.T) {
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"one": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}}}}})
	t.Cleanup(table.close)
	r := New(nil, Options{})
	for _, params := range []string{`{"name":"slow","task":{"ttl":60000}}`, `{"name":"slow","task":null}`} {
		tg, err := r.calls.resolve(table.vhosts["v"], "tools/call", json.RawMessage(params))
		if err != nil {
			t.Fatalf("%s refused: %+v", params, err)
		}
		if _, ok := tg.params["task"]; ok {
			t.Fatalf("%s: params.task reaches the backend", params)
		}
	}
}

func TestEra_LegacyResultsLoseTheModernEnvelope(t *testing.T) {
	for in, want := range map[string]string{
		`{"content":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"backend"}}}`: `{"content":[]}`,
		`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b"},"trace":1}}`:                                                      `{"content":[],"_meta":{"trace":1}}`,
		`{"content":[{"type":"text","text":"no envelope"}]}`:                                                                                        `{"content":[{"type":"text","text":"no envelope"}]}`,
	} {
		if got := envelope.Strip(json.RawMessage(in)); string(got) != want {
			t.Errorf("%s for a 2025 session: %s, want %s", in, got, want)
		}
	}
}
