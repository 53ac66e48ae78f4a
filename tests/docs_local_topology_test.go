package tests

// docs/guide/compose.md's commands, run as a reader pastes them.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// markdownSection is the text of the "## title" section of doc.
func markdownSection(t *testing.T, doc, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// shellBlocks are the ```sh code blocks of md, in order.
func shellBlocks(md string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(md, "```sh\n")
		if !ok {
			return blocks
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks = append(blocks, block)
		md = after
	}
}

// The local topology without Docker, as docs/guide/compose.md writes it: started
// by its commands (with the binaries `make build` makes and the ports
// swapped for free ones, so the test runs beside anything), used with the
// commands of "Run it locally" (a session across both gateways), and ended
// by its stop step, after which nothing it started is left running. In
// bash, and in zsh when it is installed: pasted commands must not rely on
// word splitting, history expansion or comments.
func TestDocs_LocalTopologyCommandsStartServeAndStop(t *testing.T) {
	doc := string(mustRead(t, "docs", "guide", "compose.md"))
	local := shellBlocks(markdownSection(t, doc, "Without Docker"))
	if len(local) != 3 {
		t.Fatalf("want 3 command blocks (start, URL, stop) in Without Docker, got %d", len(local))
	}
	start, setURL, stop := local[0], local[1], local[2]
	if !strings.HasPrefix(start, "make build\n") || !strings.Contains(stop, `kill "${pids[@]}"`) {
		t.Fatalf("start block must begin with make build and the stop block kill every pid:\n%s\n%s", start, stop)
	}
	var session string
	for _, b := range shellBlocks(markdownSection(t, doc, "Run it locally")) {
		if strings.Contains(b, "mcp()") {
			session = b
		}
	}
	if session == "" {
		t.Fatal("no session commands (the mcp function) in Run it locally")
	}
	for _, b := range []string{start, setURL, stop, session} {
		// "$!" is a parameter, never a history expansion; " #" or a "#"
		// starting a line would be a comment, which interactive zsh runs.
		noParams := strings.ReplaceAll(b, "$!", "")
		if strings.Contains(b, " $H") || strings.Contains(noParams, "!") || strings.Contains(b, " #") || strings.Contains("\n"+b, "\n#") {
			t.Fatalf("a command relies on word splitting, or has ! or a comment:\n%s", b)
		}
	}

	// What `make build` makes, in a directory laid out like the repository.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, pkg := range map[string]string{
		"gateway":      "github.com/mcpgw/gateway/cmd/gateway",
		"demo-backend": "github.com/mcpgw/gateway/localdev/cmd/demo-backend",
		"rrproxy":      "github.com/mcpgw/gateway/localdev/cmd/rrproxy",
	} {
		if err := os.Symlink(testsupport.BuildBinary(t, pkg), filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "localdev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "localdev", "gateway.yaml"), mustRead(t, "localdev", "gateway.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, shell := range []string{"bash", "zsh"} {
		t.Run(shell, func(t *testing.T) {
			path, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed", shell)
			}
			ports := map[string]string{}
			for _, p := range []string{"16379", "19001", "19002", "18081", "18082", "18080"} {
				ports[p] = strconv.Itoa(testsupport.FreePort(t))
			}
			swap := func(s string) string {
				for from, to := range ports {
					s = strings.ReplaceAll(s, from, to)
				}
				return strings.ReplaceAll(s, "/tmp/mcpgw-local.yaml", filepath.Join(t.TempDir(), "mcpgw-local.yaml"))
			}
			// Wait until every process answers: a bounded poll, as a
			// reader would wait for the "listening" lines.
			ready := "for p in " + ports["19001"] + " " + ports["19002"] + "; do for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$p/mcp && break; sleep 0.1; done; done\n" +
				"for p in " + ports["18081"] + " " + ports["18082"] + "; do for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$p/readyz && break; sleep 0.1; done; done\n" +
				"for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:" + ports["18080"] + "/healthz && break; sleep 0.1; done\n"
			script := swap(strings.TrimPrefix(start, "make build\n")) + ready + swap(setURL) + session +
				"mcp -H \"Mcp-Session-Id: $SID\" -d '{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"gateway-one-increment\",\"arguments\":{\"by\":1}}}'\n" +
				stop + "wait\necho all-stopped\n"
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, path, "-c", script)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			got := string(out)
			if err != nil || ctx.Err() != nil {
				t.Fatalf("%s: %v (a process left running makes wait hang)\n%s", shell, err, got)
			}
			// Two calls of one session through the round robin: the
			// counter went 1, then 2, across both gateways.
			if !strings.Contains(got, `"gateway-one-increment"`) || !strings.Contains(got, `"text":"1"`) || !strings.Contains(got, `"text":"2"`) || !strings.HasSuffix(strings.TrimSpace(got), "all-stopped") {
				t.Fatalf("%s: the session did not work through the proxy, or not everything stopped:\n%s", shell, got)
			}
		})
	}
}
