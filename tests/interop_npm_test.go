package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	c, a, b := interopCluster(t, fmt.Sprintf("everything: {transport: stdio, command: %q, args: [%q, stdio], timeout: 30s, pool: {min: 1, max: 2}}",
		node, filepath.Join(dir, "dist", "index.js")))
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

// MCP Apps on a multi-backend vhost, driven as a host drives them, with
// the TypeScript SDK v2 client in both its legacy and 2026-07-28 modes:
// the example app server from npm (over stdio) beside a go-sdk backend,
// two gateway instances behind a balancer. The host finds the app tool
// with ext-apps' own helper, which accepts only ui:// URIs; reads the UI
// resource at the published ui://{key}/... URI; and calls the tool by the
// raw name the app's HTML uses.
func TestInterop_MCPAppsHostOnAMultiBackendVHost(t *testing.T) {
	node, dir := interopNode(t, "@modelcontextprotocol/server-basic-vanillajs")
	_, _ = interopNode(t, "@modelcontextprotocol/ext-apps")
	c, a, b := interopCluster(t, fmt.Sprintf("clock: {transport: stdio, command: %q, args: [%q, --stdio], timeout: 30s, pool: {min: 1, max: 2}}",
		node, filepath.Join(dir, "dist", "index.js")))
	lb := testsupport.StartRoundRobin(t, a.URL, b.URL)

	// The host script resolves its packages from the fixture cache.
	script, err := os.ReadFile(filepath.Join("interop", "apps-host.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(filepath.Dir(filepath.Dir(dir)), "..", fmt.Sprintf("apps-host-%d.mjs", time.Now().UnixNano()))
	if err := os.WriteFile(host, script, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(host) })

	for _, mode := range []string{"legacy", "modern"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, node, host, mcpURL(lb.URL), c.token("alice"), mode).Output()
			if err != nil {
				t.Fatalf("the host script: %v\n%s", err, out)
			}
			var got struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Extensions      map[string]any `json:"extensions"`
				Tools           []string       `json:"tools"`
				AppTool, UIURI  string
				UIReadURI       string `json:"uiReadUri"`
				UIMime          string `json:"uiMime"`
				UIHTML          bool   `json:"uiHTML"`
				RawCallError    bool   `json:"rawCallError"`
				RawCallText     string `json:"rawCallText"`
				Error           string `json:"error"`
			}
			if err := json.Unmarshal(out, &got); err != nil || got.Error != "" {
				t.Fatalf("host script output %s (%v)", out, err)
			}
			if got.AppTool != "clock-get-time" || got.UIURI != "ui://clock/get-time/mcp-app.html" {
				t.Fatalf("the host found app tool %q with UI %q, want clock-get-time and ui://clock/get-time/mcp-app.html (tools %v)", got.AppTool, got.UIURI, got.Tools)
			}
			if got.UIReadURI != got.UIURI || !got.UIHTML || !strings.HasPrefix(got.UIMime, "text/html") {
				t.Fatalf("reading the UI resource: uri %q, mime %q, html %v", got.UIReadURI, got.UIMime, got.UIHTML)
			}
			if got.RawCallError || got.RawCallText == "" {
				t.Fatalf("the app's call of get-time by its raw name: error %v, text %q", got.RawCallError, got.RawCallText)
			}
			// This example server declares no capabilities.extensions, so
			// the gateway, which advertises the union of what its backends
			// declare (unit-tested in router), declares none either.
			if len(got.Extensions) != 0 {
				t.Errorf("extensions %v advertised for backends that declare none", got.Extensions)
			}
			if (mode == "modern") != (got.ProtocolVersion == "2026-07-28") {
				t.Errorf("mode %s negotiated %q", mode, got.ProtocolVersion)
			}
		})
	}
}

// A `session: reuse` backend that sends notifications on its own:
// server-everything (its Streamable HTTP mode, stateful) simulates updates
// of the resources a session subscribed to, every 5 s, once the session
// calls toggle-subscriber-updates. Through two gateways behind a
// balancer, the client session's subscription, the toggle and the GET
// stream may each reach another instance; the updates the backend sends
// its one session reach the client's stream, with published URIs.
func TestInterop_ReuseBackendNotificationsReachTheClient(t *testing.T) {
	node, dir := interopNode(t, "@modelcontextprotocol/server-everything")
	port := testsupport.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, node, filepath.Join(dir, "dist", "index.js"), "streamableHttp")
	srv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = srv.Wait() })
	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		seen := ""
		for {
			n, err := stderr.Read(buf)
			seen += string(buf[:n])
			if strings.Contains(seen, "listening on port") {
				close(ready)
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start listening")
	}

	c, a, b := interopCluster(t, fmt.Sprintf("everything: {url: \"http://127.0.0.1:%d/mcp\", session: reuse}", port))
	cl := c.client("alice")
	cl.Initialize(a, nil)
	const uri = "everything-demo://resource/dynamic/text/1"
	if r := cl.Request(b, "resources/subscribe", map[string]any{"uri": uri}); r.Error() != nil {
		t.Fatalf("subscribe: %s", r.Body)
	}
	stream := cl.Stream(a, "")
	defer stream.Close()
	if r := cl.Request(b, "tools/call", map[string]any{"name": "everything-toggle-subscriber-updates"}); r.Error() != nil || !strings.Contains(r.Text(), "Started") {
		t.Fatalf("toggle: %s", r.Body)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		ev, ok := stream.NextWithin(time.Until(deadline))
		if !ok {
			break
		}
		if strings.Contains(ev.Data, "notifications/resources/updated") {
			if !strings.Contains(ev.Data, `"uri":"`+uri+`"`) {
				t.Fatalf("update %s, want %s", ev.Data, uri)
			}
			return
		}
	}
	t.Fatal("no resource update from the reused backend session reached the client's stream within 20s")
}

// interopCluster is two gateway instances on the shared Redis over a
// "demo" vhost of the npm backend (its YAML entry, one line) and a go-sdk
// backend "web".
func interopCluster(t *testing.T, npmBackend string) (c *cluster, a, b *testsupport.GatewayProcess) {
	t.Helper()
	c = &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	c.backends["web"] = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "web"})
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(fmt.Sprintf("%s  demo:\n    backends:\n      %s\n      web: {url: %q}\n", configHead(), npmBackend, c.backends["web"].URL))
	return c, c.start(), c.start()
}
