package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Unmodified MCP software from npm behind the gateway (issue 19):
// @modelcontextprotocol/server-everything over stdio beside a go-sdk
// backend on a multi-backend vhost, two gateway instances on one Redis
// behind a round-robin balancer. Its resource links and embedded
// resources come back with published URIs, and following each through
// the same vhost, on whichever instance, reads the resource. The
// fixtures come from scripts/npm-fixtures.sh (make test and .ci/run run
// it): without them the test skips, and fails under CI=true.

// interopNode returns the Node binary and a package's directory in the
// fixture cache.
func interopNode(t *testing.T, pkg string) (node, dir string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".cache", "interop", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	node, dir = filepath.Join(root, "node", "bin", "node"), filepath.Join(root, pkg)
	for _, p := range []string{node, dir} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: .ci/run must run scripts/npm-fixtures.sh", p)
			}
			t.Skipf("%s is missing: run scripts/npm-fixtures.sh (make test does)", p)
		}
	}
	return node, dir
}

func TestInterop_ServerEverythingResourceLinksFollowedThroughTheGateway(t *testing.T) {
	node, dir := interopNode(t, "@modelcontextprotocol/server-everything")
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	c.backends["web"] = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "web"})
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(fmt.Sprintf(`%s  demo:
    backends:
      everything:
        transport: stdio
        command: %s
        args: [%q, stdio]
        timeout: 30s
        pool: {min: 1, max: 2}
      web:
        url: %s
`, configHead(), node, filepath.Join(dir, "dist", "index.js"), c.backends["web"].URL))
	a, b := c.start(), c.start()
	lb := testsupport.StartRoundRobin(t, a.URL, b.URL)
	ep := testsupport.BaseURL(lb.URL)
	cl := c.client("alice")
	cl.Initialize(ep, nil)

	links := cl.Request(ep, "tools/call", map[string]any{"name": "everything-get-resource-links", "arguments": map[string]any{"count": 2}})
	var uris []string
	for _, block := range contentBlocks(t, links) {
		if block["type"] == "resource_link" {
			uris = append(uris, block["uri"].(string))
		}
	}
	if len(uris) != 2 {
		t.Fatalf("get-resource-links answered %s, want two resource links", links.Body)
	}
	ref := cl.Request(ep, "tools/call", map[string]any{"name": "everything-get-resource-reference", "arguments": map[string]any{"resourceType": "Text", "resourceId": 3}})
	embedded := ""
	for _, block := range contentBlocks(t, ref) {
		if r, ok := block["resource"].(map[string]any); ok && block["type"] == "resource" {
			embedded, _ = r["uri"].(string)
		}
	}
	if embedded == "" {
		t.Fatalf("get-resource-reference answered %s, want an embedded resource", ref.Body)
	}
	for _, uri := range append(uris, embedded) {
		if !strings.HasPrefix(uri, "everything-") {
			t.Fatalf("a URI in a result is the backend's own, not published: %q", uri)
		}
		read := cl.Request(ep, "resources/read", map[string]any{"uri": uri})
		contents, _ := read.Result()["contents"].([]any)
		first, _ := contents[0].(map[string]any)
		if len(contents) == 0 || first["uri"] != uri || (first["text"] == nil && first["blob"] == nil) {
			t.Fatalf("reading %s through the gateway: %s", uri, read.Body)
		}
	}
	// A 2026-07-28 client is given the same published links.
	modern := (&testsupport.Client{T: t, Token: c.token("alice")}).ModernRequest(ep, "tools/call", map[string]any{"name": "everything-get-resource-links", "arguments": map[string]any{"count": 1}}, nil)
	if !strings.Contains(string(modern.Body), `"uri":"everything-`) {
		t.Fatalf("a 2026-07-28 client's links: %s", modern.Body)
	}
}

// contentBlocks is a tools/call result's content.
func contentBlocks(t *testing.T, r *testsupport.Reply) []map[string]any {
	t.Helper()
	raw, _ := r.Result()["content"].([]any)
	var out []map[string]any
	for _, b := range raw {
		if m, ok := b.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
