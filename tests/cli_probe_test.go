package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/hydra"
)

// `gateway check --probe` connects (cmd/gateway/probe.go): a real
// backend, a port nobody listens on, a real Hydra named as it names
// itself and without its trailing slash, the shared Redis, and an access
// deny with a typo. One line per thing checked; exit 1 on any FAIL.

func writeProbeConfig(t *testing.T, cfg string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func probeConfig(issuer, deny, backendURL, extraVHost string) string {
	return fmt.Sprintf(`allowed_hosts: [127.0.0.1, localhost]
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
virtual_hosts:
  demo:
    access:
      - allow: ["*"]
        deny: [%q]
    rate_limits:
      - {per: principal, tools: ["echo"], limit: 10, window: 1m}
    backends:
      gateway-one: {url: %s}
%s`, issuer, deny, backendURL, extraVHost)
}

func TestCheckProbe_ReachableMatchingAndOK(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	idp := hydra.Start(t, hydra.Options{})
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	path := writeProbeConfig(t, probeConfig(idp.Issuer, "increment", backend.URL, ""))

	stdout, stderr, code := runBinary(t, bin, nil, "check", "--probe", "--config", path, "--redis-url", redisSrv.URL())
	if code != 0 || strings.Contains(stdout, "FAIL") {
		t.Fatalf("check --probe: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ok   backend demo/gateway-one: reachable, lists 3 tool(s)",
		"ok   issuer " + idp.Issuer + ": discovery names the issuer, JWKS ",
		"ok   redis redis://",
		"ok   patterns of demo: every access and rate limit pattern matches something",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCheckProbe_UnreachableMismatchedAndUnmatched(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	idp := hydra.Start(t, hydra.Options{})
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	down := fmt.Sprintf("http://127.0.0.1:%d/mcp", testsupport.FreePort(t))
	noSlash := strings.TrimSuffix(idp.Issuer, "/")
	path := writeProbeConfig(t, probeConfig(noSlash, "incremnt", backend.URL,
		"  down:\n    backends:\n      gone: {url: "+down+"}\n"))

	stdout, stderr, code := runBinary(t, bin, nil, "check", "--probe", "--probe-timeout", "5s", "--config", path)
	if code != 1 {
		t.Fatalf("check --probe: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ok   backend demo/gateway-one: reachable",
		"FAIL backend down/gone: ",
		"FAIL issuer " + noSlash + ": discovery: issuer mismatch: ",
		fmt.Sprintf("names issuer %q, the config says %q", idp.Issuer, noSlash),
		`FAIL pattern virtual_hosts.demo.access[0].deny[0] "incremnt" matches nothing virtual host demo publishes (deny)`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "3 problem(s) found") {
		t.Errorf("stderr: %q, want the problems counted", stderr)
	}
	if strings.Contains(stdout, "rate_limits") {
		t.Errorf("a rate limit glob that matches is reported:\n%s", stdout)
	}
}
