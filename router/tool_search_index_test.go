package router

import (
	"encoding/json"
	"strings"
	"testing"

	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/toolsearch"
	"github.com/mcpgw/gateway/router/upstream"
)

// Pure: a tool_search vhost compiled from config, its lists indexed from
// items given here; nothing touches Redis or a backend.

func searchVHost(t *testing.T, always ...string) (*Router, *vhost) {
	t.Helper()
	names, err := policy.CompileNames(always)
	if err != nil {
		t.Fatal(err)
	}
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", ToolSearch: &ToolSearch{Always: names}, Backends: map[string]*Backend{
		"docs": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}, ToolNameAliases: map[string]string{"Lookup": "find_page"}},
		"ui":   {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}},
	}}})
	t.Cleanup(table.close)
	return &Router{}, table.vhosts["v"]
}

// _meta hints: a search hint is indexed with the description, and the
// tool's _meta passes through a search's answer as it does through
// tools/list (a UI resource published); alwaysLoad lists a tool.
func TestToolSearchIndex_HintsAndMeta(t *testing.T) {
	r, v := searchVHost(t, "docs-*_page")
	ix := r.fed.newToolIndexer(v, "ui")
	ix.add("render_chart", json.RawMessage(`{"name":"render_chart","description":"Draw a chart.","inputSchema":{"type":"object","properties":{"series":{"type":"array","description":"points to plot"}}},`+
		`"annotations":{"readOnlyHint":true},"outputSchema":{"type":"object"},`+
		`"_meta":{"anthropic/searchHint":"visualise graph plot diagram","anthropic/alwaysLoad":true,"ui":{"resourceUri":"ui://chart/app.html"}}}`))
	ix.add("search_tools", json.RawMessage(`{"name":"search_tools","description":"a backend's own"}`)) // published ui-search_tools: not shadowed
	list := ix.build()
	if list.len() != 2 || list.names[0] != "ui-render_chart" || list.names[1] != "ui-search_tools" {
		t.Fatalf("indexed %v", list.names)
	}
	hits := v.search.ranker.Rank("make a diagram", []toolsearch.Part{{Seg: list.seg}}, 5)
	if len(hits) != 1 || hits[0].Doc != 0 {
		t.Fatalf("the search hint was not indexed: %v", hits)
	}
	var shown map[string]any
	if err := json.Unmarshal(list.shown[0], &shown); err != nil {
		t.Fatal(err)
	}
	meta, _ := shown["_meta"].(map[string]any)
	if shown["name"] != "ui-render_chart" || shown["annotations"] == nil || shown["inputSchema"] == nil || shown["outputSchema"] != nil ||
		meta["anthropic/searchHint"] == nil || !strings.HasPrefix(meta["ui"].(map[string]any)["resourceUri"].(string), "ui://ui/") {
		t.Fatalf("a search answers the tool as %s", list.shown[0])
	}

	// What tools/list keeps: always globs, alwaysLoad, never a backend's
	// tool of a gateway tool's name.
	for _, tc := range []struct {
		name, item string
		want       bool
	}{
		{"docs-find_page", `{"name":"find_page"}`, true},
		{"docs-delete_site", `{"name":"delete_site"}`, false},
		{"ui-render_chart", `{"name":"render_chart","_meta":{"anthropic/alwaysLoad":true}}`, true},
		{"ui-render_map", `{"name":"render_map","_meta":{"anthropic/alwaysLoad":false}}`, false},
		{"ui-note", `{"name":"note","description":"mentions anthropic/alwaysLoad in words"}`, false},
		{"search_tools", `{"name":"search_tools"}`, false},
	} {
		if got := v.search.listed(&federated.Item{Name: tc.name, Raw: json.RawMessage(tc.item)}); got != tc.want {
			t.Errorf("listed(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Without tool_search every item is listed.
	if !(*toolSearch)(nil).listed(&federated.Item{Name: "search_tools"}) {
		t.Error("a vhost without tool_search hides an item")
	}
}

// An alias is indexed under its own name, and visibility masks follow
// access decisions.
func TestToolSearchIndex_AliasAndVisibility(t *testing.T) {
	r, v := searchVHost(t)
	ix := r.fed.newToolIndexer(v, "docs")
	ix.add("find_page", json.RawMessage(`{"name":"find_page","description":"Find a page by title."}`))
	ix.add("delete_site", json.RawMessage(`{"name":"delete_site","description":"Delete the whole site."}`))
	list := ix.build()
	if list.names[0] != "Lookup" || list.names[1] != "docs-delete_site" {
		t.Fatalf("published names %v", list.names)
	}
	if hits := v.search.ranker.Rank("lookup", []toolsearch.Part{{Seg: list.seg}}, 5); len(hits) == 0 || hits[0].Doc != 0 {
		t.Fatalf("the alias is not searched: %v", hits)
	}
	p, err := policy.CompileAccess([]policy.AccessRule{{Allow: []string{"*"}, Deny: []string{"docs-delete_*"}}})
	if err != nil {
		t.Fatal(err)
	}
	view := p.Decide("v", nil)
	mask := list.visible(view)
	if !mask.Has(0) || mask.Has(1) {
		t.Fatalf("mask %v", mask)
	}
	if list.visible(policy.View{}) != nil {
		t.Fatal("no rules: every tool visible, no mask")
	}
	for _, q := range []string{"delete the site", "site"} {
		for _, h := range v.search.ranker.Rank(q, []toolsearch.Part{{Seg: list.seg, Visible: mask}}, 5) {
			if h.Doc == 1 {
				t.Fatalf("%q found the hidden tool", q)
			}
		}
	}
}

// A reload that changes tool_search changes the vhost's lists: its
// sessions are told.
func TestToolSearch_ReloadReportsAChange(t *testing.T) {
	names, _ := policy.CompileNames([]string{"a-*"})
	backends := map[string]*Backend{"a": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}}}
	r := New(map[string]*VirtualHost{"v": {Name: "v", Backends: backends}}, Options{})
	defer r.Close()
	if got := r.Reload(map[string]*VirtualHost{"v": {Name: "v", Backends: backends, ToolSearch: &ToolSearch{Always: names}}}); len(got) != 1 {
		t.Fatalf("tool_search added: changed %v", got)
	}
	if got := r.Reload(map[string]*VirtualHost{"v": {Name: "v", Backends: backends, ToolSearch: &ToolSearch{Always: names}}}); len(got) != 0 {
		t.Fatalf("nothing changed: changed %v", got)
	}
	other, _ := policy.CompileNames([]string{"a-x"})
	if got := r.Reload(map[string]*VirtualHost{"v": {Name: "v", Backends: backends, ToolSearch: &ToolSearch{Always: other}}}); len(got) != 1 {
		t.Fatalf("always changed: changed %v", got)
	}
}

// What the indexes hold is bounded per vhost: past maxIndexedBytes the
// cache starts over, and what it counts follows what it holds.
func TestToolSearchIndex_CacheBound(t *testing.T) {
	s := newToolSchemas()
	half := &indexedTools{names: make([]string, 10), bytes: maxIndexedBytes/2 - 10*postingBytes} // two fit
	s.put("a", toolSchemaEntry{backend: "b", search: half})
	s.put("b", toolSchemaEntry{backend: "b", search: half})
	if len(s.entries) != 2 || s.indexed != maxIndexedBytes {
		t.Fatalf("two halves: %d entries, %d bytes counted", len(s.entries), s.indexed)
	}
	s.put("b", toolSchemaEntry{backend: "b", search: half}) // replaced: counted once
	if len(s.entries) != 2 || s.indexed != maxIndexedBytes {
		t.Fatalf("one replaced: %d entries, %d bytes counted", len(s.entries), s.indexed)
	}
	s.put("c", toolSchemaEntry{backend: "b", search: half}) // over: starts over
	if _, ok := s.entries["c"]; len(s.entries) != 1 || !ok || s.indexed != half.size() {
		t.Fatalf("a third half: %d entries, %d bytes counted", len(s.entries), s.indexed)
	}
	s.invalidate("b")
	if len(s.entries) != 0 || s.indexed != 0 {
		t.Fatalf("after invalidating the backend: %d entries, %d bytes counted", len(s.entries), s.indexed)
	}
}
