package tests

import (
	"context"
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

// A stateful FastMCP server (npm fastmcp, unmodified; the fixture
// tests/interop/fastmcp-counter.mjs counts calls per session with
// FastMCP's own session id) behind two instances and a balancer, in the
// default session mode (issue 36): a 2025 client's session state reads
// 1, 2, 3 as it does DIRECT, another principal's session has its own,
// and a sessionless caller's state never carries over.
func TestInterop_FastMCPStateAcrossInstancesByDefault(t *testing.T) {
	port := startFastMCPCounter(t)
	c, a, b := interopCluster(t, fmt.Sprintf("fast: {url: \"http://127.0.0.1:%d/mcp\"}", port))
	lb := testsupport.StartRoundRobin(t, a.URL, b.URL)
	ep := testsupport.BaseURL(lb.URL)
	alice, bob := c.client("alice"), c.client("bob")
	alice.Initialize(ep, nil)
	bob.Initialize(ep, nil)
	sessions := map[string]string{}
	for i := 1; i <= 3; i++ {
		for who, cl := range map[string]*testsupport.Client{"alice": alice, "bob": bob} {
			got := fastCount(t, cl, ep, false)
			if got.n != i || (sessions[who] != "" && sessions[who] != got.session) {
				t.Fatalf("%s's call %d counted %d in FastMCP session %s (before: %s), want %d in one session", who, i, got.n, got.session, sessions[who], i)
			}
			sessions[who] = got.session
		}
	}
	if sessions["alice"] == sessions["bob"] {
		t.Fatalf("alice and bob share FastMCP session %s", sessions["alice"])
	}
	for i := range 3 {
		if got := fastCount(t, alice, ep, true); got.n != 1 || got.session == sessions["alice"] || got.session == sessions["bob"] {
			t.Fatalf("a sessionless call %d counted %d in FastMCP session %s", i, got.n, got.session)
		}
	}
}

// fastCount calls the FastMCP counter as a 2025 session or sessionless.
func fastCount(t *testing.T, cl *testsupport.Client, ep testsupport.Endpoint, modern bool) counted {
	t.Helper()
	params := map[string]any{"name": "fast-count", "arguments": map[string]any{}}
	var r *testsupport.Reply
	if modern {
		r = cl.ModernRequest(ep, "tools/call", params, nil)
	} else {
		r = cl.Request(ep, "tools/call", params)
	}
	var got counted
	if _, err := fmt.Sscanf(r.Text(), "%d %s", &got.n, &got.session); err != nil {
		t.Fatalf("fast-count answered %s", r.Body)
	}
	return got
}

// startFastMCPCounter starts the FastMCP fixture on a free port, stopped
// when the test ends, and returns the port once it listens.
func startFastMCPCounter(t *testing.T) int {
	t.Helper()
	node, dir := interopNode(t, "fastmcp")
	script, err := os.ReadFile(filepath.Join("interop", "fastmcp-counter.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// Beside node_modules, so that its imports resolve there.
	path := filepath.Join(filepath.Dir(filepath.Dir(dir)), fmt.Sprintf("fastmcp-counter-%d.mjs", time.Now().UnixNano()))
	if err := os.WriteFile(path, script, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	port := testsupport.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, node, path, fmt.Sprint(port))
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
			if strings.Contains(seen, "fastmcp-counter listening") {
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
	case <-time.After(60 * time.Second):
		t.Fatal("the FastMCP server did not start listening")
	}
	return port
}
