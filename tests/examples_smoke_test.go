package tests

// The runnable examples, run: each starts the gateway with the example's
// own gateway.yaml (only addresses replaced: the backends', the
// provider's, each on a free port) and makes a real tools/call through
// it, with the npm servers from the fixture cache, Ory Hydra as the
// identity provider and a real redis-server.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// exampleCopy copies examples/name into a temporary directory (relative
// paths in the config keep working) and applies repl to its gateway.yaml
// (exampleEdit).
func exampleCopy(t *testing.T, name string, repl ...string) (configPath string) {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(repoPath("examples", name))); err != nil {
		t.Fatal(err)
	}
	configPath = filepath.Join(dst, "gateway.yaml")
	exampleEdit(t, configPath, repl...)
	return configPath
}

// exampleEdit replaces, in a copied example config, each old string of
// repl with the new one after it. An old string the config lacks fails
// the test: the example changed under it.
func exampleEdit(t *testing.T, configPath string, repl ...string) {
	t.Helper()
	data, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(cfg, repl[i]) {
			t.Fatalf("the example's gateway.yaml no longer holds %q", repl[i])
		}
		cfg = strings.ReplaceAll(cfg, repl[i], repl[i+1])
	}
	if err := os.WriteFile(configPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// npxFromCache returns a PATH whose first directory holds an `npx` that
// runs the given packages from the fixture cache (scripts/npm-fixtures.sh)
// as `npx -y PKG[@version] ARGS...` would, without the network, so an
// example's `command: npx` runs unchanged. Any other package fails.
func npxFromCache(t *testing.T, pkgs ...string) string {
	t.Helper()
	var script strings.Builder
	script.WriteString("#!/bin/sh\n# npx for the examples' tests: packages from .cache/interop only\n")
	script.WriteString("while [ \"$1\" = -y ] || [ \"$1\" = --yes ]; do shift; done\npkg=$1; shift\ncase \"$pkg\" in\n")
	for _, pkg := range pkgs {
		node, dir := interopNode(t, pkg)
		var meta struct {
			Bin map[string]string `json:"bin"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil || json.Unmarshal(data, &meta) != nil || len(meta.Bin) != 1 {
			t.Fatalf("%s: want a package.json with one bin: %v", pkg, err)
		}
		for _, entry := range meta.Bin {
			fmt.Fprintf(&script, "  %s|%s@*) exec %q %q \"$@\" ;;\n", pkg, pkg, node, filepath.Join(dir, entry))
		}
	}
	script.WriteString("  *) echo \"npx (tests): $pkg is not in the fixture cache\" >&2; exit 127 ;;\nesac\n")
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

func TestExamples_StdioNpx(t *testing.T) {
	path := npxFromCache(t, "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem")
	cfg := exampleCopy(t, "stdio-npx")
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	g := testsupport.StartGateway(t, bin, []string{"--config", cfg}, []string{"PATH=" + path})

	cl := &testsupport.Client{T: t, VHost: "local"}
	cl.Initialize(g, nil)
	names := cl.Call(g, "tools/list", nil).ToolNames()
	for _, want := range []string{"everything-echo", "everything-get-sum", "files-read_text_file", "files-list_directory"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if got := cl.Call(g, "tools/call", map[string]any{"name": "everything-echo", "arguments": map[string]any{"message": "through the gateway"}}).Text(); !strings.Contains(got, "through the gateway") {
		t.Errorf("everything-echo answered %q", got)
	}
	shared := filepath.Join(filepath.Dir(cfg), "shared")
	if got := cl.Call(g, "tools/call", map[string]any{"name": "files-read_text_file", "arguments": map[string]any{"path": filepath.Join(shared, "hello.txt")}}).Text(); !strings.Contains(got, "Hello from examples/stdio-npx/shared.") {
		t.Errorf("files-read_text_file answered %q", got)
	}
	// The filesystem server is held to ./shared.
	outside := cl.Request(g, "tools/call", map[string]any{"name": "files-read_text_file", "arguments": map[string]any{"path": cfg}})
	if r := outside.Result(); outside.Error() == nil && r["isError"] != true {
		t.Errorf("reading outside ./shared: %s", outside.Body)
	}
}

func TestExamples_JWKSAccessLimits(t *testing.T) {
	h := hydra.Start(t, hydra.Options{})
	// The token first, as a user gets one before calling: under load, a
	// code exchange racing the gateway's first JWK Set fetch (Hydra makes
	// its signing key on first use) once failed with invalid_grant.
	token := h.AccessToken(t, "alice", "mcpgw")
	tools := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "tools"})
	admin := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "admin"})
	cfg := exampleCopy(t, "jwks-access-limits",
		"http://127.0.0.1:4444/.well-known/jwks.json", h.Public+"/.well-known/jwks.json",
		"http://127.0.0.1:4444/", h.Issuer,
		"http://127.0.0.1:9001/mcp", tools.URL, "http://127.0.0.1:9002/mcp", admin.URL)
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	g := testsupport.StartGateway(t, bin, []string{"--config", cfg, "--redis-url", redisSrv.URL()}, nil)

	if r := (&testsupport.Client{T: t, VHost: "team"}).Request(g, "tools/list", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("no token: status %d, want 401", r.Status)
	}
	cl := &testsupport.Client{T: t, VHost: "team", Token: token}
	cl.Initialize(g, nil)
	// Not in mcp-admins: the tools backend without tools-increment.
	if names := cl.Call(g, "tools/list", nil).ToolNames(); !slices.Equal(names, []string{"tools-echo", "tools-get_stats"}) {
		t.Errorf("tools/list: %v, want tools-echo and tools-get_stats", names)
	}
	echo := func() *testsupport.Reply {
		return cl.Request(g, "tools/call", map[string]any{"name": "tools-echo", "arguments": map[string]any{"text": "hi"}})
	}
	if got := echo().Text(); got != "hi" {
		t.Errorf("tools-echo answered %q", got)
	}
	for _, hidden := range []string{"tools-increment", "admin-echo"} {
		if e := cl.Request(g, "tools/call", map[string]any{"name": hidden, "arguments": map[string]any{}}).Error(); e == nil || e.Code != -32602 {
			t.Errorf("%s: %+v, want -32602 as for an unknown tool", hidden, e)
		}
	}
	// 3 tools-echo calls a minute: the fourth is refused before the backend.
	for i := 2; i <= 3; i++ {
		if r := echo(); r.Status != http.StatusOK || r.Text() != "hi" {
			t.Fatalf("tools-echo call %d: %d %s", i, r.Status, r.Body)
		}
	}
	over := echo()
	if e := over.Error(); over.Status != http.StatusTooManyRequests || over.Header.Get("Retry-After") == "" || e == nil || e.Code != -32029 {
		t.Fatalf("the fourth tools-echo: status %d, Retry-After %q, body %s", over.Status, over.Header.Get("Retry-After"), over.Body)
	}
	if got := cl.Call(g, "tools/call", map[string]any{"name": "tools-get_stats", "arguments": map[string]any{}}); got.Status != http.StatusOK {
		t.Errorf("another tool under the limit: %d", got.Status)
	}
}

func TestExamples_Tasks(t *testing.T) {
	path := npxFromCache(t, "@modelcontextprotocol/server-everything")
	cfg := exampleCopy(t, "tasks")
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	g := testsupport.StartGateway(t, bin, []string{"--config", cfg, "--redis-url", redisSrv.URL()}, []string{"PATH=" + path})

	cl := &testsupport.Client{T: t, VHost: "jobs"}
	args := map[string]any{"duration": 1, "steps": 2}
	created := cl.ModernRequest(g, "tools/call", map[string]any{"name": "trigger-long-running-operation", "arguments": args}, tasksCaps).Result()
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("a call with the extension: %v, want a task", created)
	}
	done := awaitTask(t, cl, g, id, hasStatus("completed"))
	if res := fmt.Sprint(done["result"]); !strings.Contains(res, "Long running operation completed") {
		t.Fatalf("the task's result: %v", done["result"])
	}
	// Without the extension the same tool answers synchronously.
	plain := cl.ModernRequest(g, "tools/call", map[string]any{"name": "trigger-long-running-operation", "arguments": args}, nil)
	if r := plain.Result(); r["taskId"] != nil || !strings.Contains(plain.Text(), "Long running operation completed") {
		t.Fatalf("a call without the extension: %s", plain.Body)
	}
}

func TestExamples_MultiInstanceRedis(t *testing.T) {
	one := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "backend-one"})
	two := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "backend-two"})
	cfg := exampleCopy(t, "multi-instance-redis", "http://backend-one:9001/mcp", one.URL, "http://backend-two:9001/mcp", two.URL)
	secret := []byte("example-secret-0123456789abcdef0123456789")
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	start := func() *testsupport.GatewayProcess {
		return testsupport.StartGateway(t, bin, []string{"--config", cfg, "--redis-url", redisSrv.URL()},
			[]string{"MCPGW_JWT_SECRET=" + string(secret)})
	}
	a, b := start(), start()

	// One session, opened on A, used through B and A in turn.
	cl := &testsupport.Client{T: t, Token: testsupport.MintJWT(t, secret, testsupport.StdClaims("alice"))}
	cl.Initialize(a, nil)
	if got := cl.Call(b, "tools/call", map[string]any{"name": "one-echo", "arguments": map[string]any{"text": "via b"}}).Text(); got != "via b" {
		t.Errorf("one-echo through B: %q", got)
	}
	if got := cl.Call(a, "tools/call", map[string]any{"name": "two-echo", "arguments": map[string]any{"text": "via a"}}).Text(); got != "via a" {
		t.Errorf("two-echo through A: %q", got)
	}
	// Another principal presenting alice's session gets 404 on either.
	bob := &testsupport.Client{T: t, Token: testsupport.MintJWT(t, secret, testsupport.StdClaims("bob")), SessionID: cl.SessionID}
	if r := bob.Request(b, "tools/list", nil); r.Status != http.StatusNotFound {
		t.Errorf("bob with alice's session: %d, want 404", r.Status)
	}
}

func TestExamples_OpenAPI(t *testing.T) {
	cfg := exampleCopy(t, "openapi")
	api := startJSONServer(t, filepath.Join(filepath.Dir(cfg), "db.json")) // json-server writes to its copy
	exampleEdit(t, cfg, "base_url: http://127.0.0.1:3000", "base_url: "+api)
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	g := testsupport.StartGateway(t, bin, []string{"--config", cfg}, nil)

	cl := &testsupport.Client{T: t, VHost: "books"}
	cl.Initialize(g, nil)
	if names := cl.Call(g, "tools/list", nil).ToolNames(); !slices.Equal(names, []string{"getBook", "listBooks"}) {
		t.Errorf("tools/list: %v, want getBook and listBooks", names)
	}
	res := asToolResult(t, cl.Call(g, "tools/call", map[string]any{"name": "listBooks", "arguments": map[string]any{"author": "Octavia E. Butler"}}))
	if res.IsError || !strings.Contains(string(res.StructuredContent), "Kindred") || strings.Contains(string(res.StructuredContent), "Earthsea") {
		t.Errorf("listBooks by author: %+v", res)
	}
	if res := asToolResult(t, cl.Call(g, "tools/call", map[string]any{"name": "getBook", "arguments": map[string]any{"id": 99}})); !res.IsError || !strings.Contains(res.Content[0].Text, "HTTP 404") {
		t.Errorf("getBook of a missing book: %+v", res)
	}
	if e := cl.Request(g, "tools/call", map[string]any{"name": "addBook", "arguments": map[string]any{"body": map[string]any{"title": "x", "author": "y"}}}).Error(); e == nil || e.Code != -32602 {
		t.Errorf("addBook, denied by the access rule: %+v", e)
	}
}
