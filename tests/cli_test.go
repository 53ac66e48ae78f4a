package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCLI_BadConfigStopsStartupNamingFieldAndFile(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	dir := t.TempDir()
	cases := map[string]struct{ yaml, want string }{
		"unknown field":  {"auth: {mode: none}\nbogus: 1\nvirtual_hosts: {d: {backends: {a: {url: 'http://x/mcp'}}}}\n", "bogus"},
		"bad url":        {"auth: {mode: none}\nvirtual_hosts: {d: {backends: {a: {url: 'ftp://x'}}}}\n", "virtual_hosts.d.backends.a.url"},
		"ambiguous keys": {"auth: {mode: none}\nvirtual_hosts: {d: {backends: {gw: {url: 'http://x/mcp'}, gw-one: {url: 'http://y/mcp'}}}}\n", "gw-one"},
		"bad duration":   {"auth: {mode: none}\nsession_ttl: soon\nvirtual_hosts: {d: {backends: {a: {url: 'http://x/mcp'}}}}\n", "session_ttl"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "--config", path, "--listen", "127.0.0.1:0").CombinedOutput()
			if err == nil {
				t.Fatalf("gateway started with a bad config:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), filepath.Base(path)) {
				t.Fatalf("message does not name %q and the file:\n%s", tc.want, out)
			}
		})
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--config") {
		t.Fatalf("no config: err %v, output %s", err, out)
	}
}

// `gateway --demo` (what `make run` starts) answers a real MCP client.
func TestCLI_DemoServesARealClient(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL(p.URL), DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.Output())
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	if !strings.Contains(p.Output(), "tools/list") {
		t.Fatalf("demo did not print a command to try:\n%s", p.Output())
	}
}

// The go-sdk client with no options probes server/discover first: the
// gateway speaks protocol 2026-07-28, so it gets it (no initialize, no
// session), whatever its demo backends speak.
func TestCLI_DefaultGoSDKClientConnects(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "default", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL(p.URL)}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.Output())
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	if tools, err := cs.ListTools(ctx, nil); err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
}
