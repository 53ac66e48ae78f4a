package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// `gateway token` (cmd/gateway/token.go), end to end as the guide tells
// it: keygen, serve-jwks on loopback, mint, and a gateway whose auth
// discovers the served keys accepting the minted token for a tools/call.

func TestToken_MintedTokenCallsThroughTheGateway(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	dir := filepath.Join(t.TempDir(), "keys")
	if stdout, stderr, code := runBinary(t, bin, nil, "token", "keygen", "--out", dir, "--alg", "RS256"); code != 0 {
		t.Fatalf("keygen: exit %d %s %s", code, stdout, stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem: %v %v", fi, err)
	}
	// StartGateway waits for the "mcpgw: listening on" line and adds
	// --listen 127.0.0.1:0.
	jwks := testsupport.StartGateway(t, bin, []string{"token", "serve-jwks", "--dir", dir}, nil)
	issuer := jwks.URL

	token, stderr, code := runBinary(t, bin, nil, "token", "mint", "--key", filepath.Join(dir, "key.pem"),
		"--iss", issuer, "--aud", "mcpgw", "--sub", "alice", "--scope", "tools:call", "--ttl", "10m")
	token = strings.TrimSpace(token)
	if code != 0 || strings.Count(token, ".") != 2 {
		t.Fatalf("mint: exit %d %q %s", code, token, stderr)
	}

	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "gateway-one"})
	// The access rule admits only minted test tokens: what an operator
	// would refuse in production is what this one requires.
	cfg := fmt.Sprintf(`allowed_hosts: [127.0.0.1, localhost]
auth:
  mode: jwt
  jwt: {issuer: %q, audience: mcpgw}
virtual_hosts:
  demo:
    access:
      - when: "claims.mcpgw_test == true"
        allow: ["*"]
    backends:
      gateway-one: {url: %s}
`, issuer, backend.URL)
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := testsupport.StartGateway(t, bin, []string{"--config", path}, nil)
	cl := &testsupport.Client{T: t, Token: token}
	cl.Initialize(gw, nil)
	if got := cl.Call(gw, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hello"}}).Text(); got != "hello" {
		t.Fatalf("tools/call with the minted token: %q", got)
	}
	if got := modernPost(t, gw, "demo", "not-a-token", "tools/list", nil); got.Status != 401 {
		t.Fatalf("a made-up token: HTTP %d, want 401", got.Status)
	}
}

func TestToken_ServeJWKSRefusesNonLoopback(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	dir := filepath.Join(t.TempDir(), "keys")
	if _, stderr, code := runBinary(t, bin, nil, "token", "keygen", "--out", dir); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		_, stderr, code := runBinary(t, bin, nil, "token", "serve-jwks", "--dir", dir, "--listen", addr)
		if code != 1 || !strings.Contains(stderr, "refused: test keys are served on loopback only") {
			t.Errorf("serve-jwks --listen %s: exit %d, %q", addr, code, stderr)
		}
	}
	if _, stderr, code := runBinary(t, bin, nil, "token", "mint", "--key", filepath.Join(dir, "key.pem"), "--ttl", "25h"); code != 1 || !strings.Contains(stderr, "at most 24h") {
		t.Errorf("mint --ttl 25h: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runBinary(t, bin, nil, "token", "keygen", "--out", dir); code != 1 || !strings.Contains(stderr, "not replaced") {
		t.Errorf("keygen over a key: exit %d, %q", code, stderr)
	}
	if stdout, _, code := runBinary(t, bin, nil, "token", "--help"); code != 0 || !strings.Contains(stdout, "gateway token serve-jwks") {
		t.Errorf("token --help: exit %d, %q", code, stdout)
	}
	if _, stderr, code := runBinary(t, bin, nil, "token", "sign"); code != 1 || !strings.Contains(stderr, "subcommands: keygen, mint, serve-jwks") {
		t.Errorf("token sign: exit %d, %q", code, stderr)
	}
}
