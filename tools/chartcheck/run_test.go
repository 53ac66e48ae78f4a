package chartcheck

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The Deployment the chart renders, run as a process: its environment
// (ports moved to free loopback ones), its args and its ConfigMap's file.
// The admin port serves the probes, metrics and status; the MCP port, the
// one Service, Ingress and HTTPRoute reach, serves none of them.
func TestChart_RenderedGatewayKeepsOperatorPathsOffTheMCPPort(t *testing.T) {
	r := sortObjects(t, render(t, ""))
	_, c := r.gateway(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(config, []byte(r.configMaps[0].Data["gateway.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	mcpAddr, adminAddr := freeAddr(t), freeAddr(t)
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil:
		case e.Name == "MCPGW_LISTEN":
			env = append(env, e.Name+"="+mcpAddr)
		case e.Name == "MCPGW_ADMIN_LISTEN":
			env = append(env, e.Name+"="+adminAddr)
		default:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	args := append([]string{}, c.Args...)
	for i, a := range args {
		if a == "/etc/mcpgw/gateway.yaml" {
			args[i] = config
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.gateway, args...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for !strings.Contains(sc.Text(), "mcpgw: listening on") {
		if !sc.Scan() {
			t.Fatalf("the gateway exited before listening:\n%s", logs.String())
		}
	}
	go func() {
		for sc.Scan() { // drain
		}
	}()
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/status"} {
		if code := get(t, "http://"+adminAddr+p); code != http.StatusOK {
			t.Errorf("admin port GET %s: %d, want 200", p, code)
		}
		if code := get(t, "http://"+mcpAddr+p); code != http.StatusNotFound {
			t.Errorf("MCP port GET %s: %d, want 404", p, code)
		}
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
