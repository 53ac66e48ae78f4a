package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// checkProbes asserts that the health and readiness probes answer ok.
func checkProbes(t *testing.T, base string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
	}
}

// `gateway --demo` (what `make run` starts) answers a real MCP client of
// the session protocol, and its probes answer before and after.
func TestCLI_DemoServesARealClient(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	checkProbes(t, p.URL)
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
	if cs.ID() == "" {
		t.Fatal("a 2025-11-25 client got no session")
	}
	checkProbes(t, p.URL)
}

// The go-sdk client with no options probes server/discover first: the
// gateway speaks protocol 2026-07-28, so it gets it (no initialize, no
// session), whatever its demo backends speak, and its calls reach them;
// the probes answer as for any client.
func TestCLI_DefaultGoSDKClientConnects(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	checkProbes(t, p.URL)
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
	if cs.ID() != "" {
		t.Fatalf("a 2026-07-28 client got session %q", cs.ID())
	}
	// The demo's backends speak only the session protocol: the gateway
	// translates a 2026-07-28 call for them.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-echo", Arguments: map[string]any{"text": "both generations"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "both generations" {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	checkProbes(t, p.URL)
}

// The commands the demo prints (what `make run` shows) work pasted into
// bash and into zsh, which splits no unquoted variable into words: a
// 2026-07-28 tools/list with no session, and a 2025-11-25 session's.
func TestCLI_DemoHelpCommandsWorkInBashAndZsh(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	var help string
	if !testsupport.Eventually(t, 10*time.Second, func() bool { // printed right after the ready line
		help = p.Output()
		return strings.Contains(help, "npx ")
	}) {
		t.Fatalf("the demo printed no help:\n%s", help)
	}
	cmds := demoCommands(help)
	if len(cmds) != 2 {
		t.Fatalf("want 2 curl commands (2026-07-28, then a 2025-11-25 session), found %d in:\n%s", len(cmds), help)
	}
	for _, cmd := range cmds {
		// An interactive shell would expand "!" (history) and, in zsh,
		// not take "#" as a comment: pasted commands have neither.
		if strings.ContainsAny(cmd, "!#") {
			t.Errorf("a command has ! or #, which an interactive shell reads differently:\n%s", cmd)
		}
	}
	for _, shell := range []string{"bash", "zsh"} {
		t.Run(shell, func(t *testing.T) {
			path, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed", shell)
			}
			for i, cmd := range cmds {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				out, err := exec.CommandContext(ctx, path, "-c", cmd).CombinedOutput()
				cancel()
				got := string(out)
				if err != nil || !strings.Contains(got, `"gateway-one-increment"`) || !strings.Contains(got, `"gateway-two-echo"`) {
					t.Fatalf("command %d in %s: %v\n%s\noutput:\n%s", i+1, shell, err, cmd, out)
				}
				if modern := strings.Contains(got, `"resultType":"complete"`); modern != (i == 0) {
					t.Fatalf("command %d in %s: a 2026-07-28 result: %v, want %v:\n%s", i+1, shell, modern, i == 0, out)
				}
			}
		})
	}
}

// demoCommands are the curl commands of the demo's help: each block of
// lines indented by two spaces that starts with curl or a variable.
func demoCommands(help string) []string {
	var cmds []string
	var cur []string
	flush := func() {
		if len(cur) > 0 && (strings.HasPrefix(cur[0], "curl ") || strings.HasPrefix(cur[0], "URL=")) {
			cmds = append(cmds, strings.Join(cur, "\n"))
		}
		cur = nil
	}
	for _, line := range strings.Split(help, "\n") {
		if rest, ok := strings.CutPrefix(line, "  "); ok && strings.TrimSpace(line) != "" {
			cur = append(cur, rest)
			continue
		}
		flush()
	}
	flush()
	return cmds
}
