package config

import (
	"os"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router"
)

func TestConfig_ToolSearch(t *testing.T) {
	if vh := mustParse(t, withPolicy("")).VirtualHosts["demo"]; vh.ToolSearch != nil {
		t.Fatalf("no tool_search block: %+v", vh.ToolSearch)
	}
	ts := mustParse(t, withPolicy("tool_search: {}\n")).VirtualHosts["demo"].ToolSearch
	if ts == nil || ts.Results != router.DefaultSearchResults || ts.Always.Match("gateway-one-echo") {
		t.Fatalf("tool_search: {} = %+v, want the defaults and nothing always listed", ts)
	}
	ts = mustParse(t, withPolicy("tool_search:\n  always: [\"gateway-one-*\", gateway-two-echo]\n  results: 50\n")).VirtualHosts["demo"].ToolSearch
	if ts.Results != 50 || !ts.Always.Match("gateway-one-x") || !ts.Always.Match("gateway-two-echo") || ts.Always.Match("gateway-two-x") {
		t.Fatalf("tool_search = %+v", ts)
	}
	for _, tc := range []struct {
		block string
		want  []string
	}{
		{"tool_search:\n  results: 51\n", []string{"demo.tool_search.results", "between 1 and 50", "(line 6)"}},
		{"tool_search:\n  results: 0\n", []string{"tool_search.results: must be between 1 and 50"}},
		{"tool_search:\n  results: ten\n", []string{"tool_search.results", "integer"}},
		{"tool_search:\n  always: [\"a\", \"\"]\n", []string{"tool_search.always[1]", "empty pattern"}},
		{"tool_search:\n  always: x\n", []string{"tool_search.always", "list"}},
		{"tool_search:\n  every: true\n", []string{"tool_search.every"}},
	} {
		checkErr(t, withPolicy(tc.block), tc.want...)
	}
}

// The guide's example is a config the gateway takes.
func TestConfig_ToolSearchGuideExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/guide/tool-search.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the guide has no yaml example")
	}
	ts := mustParse(t, block).VirtualHosts["all"].ToolSearch
	if ts == nil || ts.Results != 10 || !ts.Always.Match("github-create_issue") || ts.Always.Match("github-list_issues") {
		t.Fatalf("the guide's tool_search: %+v", ts)
	}
}
