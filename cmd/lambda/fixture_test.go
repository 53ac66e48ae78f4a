package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Secrets reach the function as environment variables, as SAM's dynamic
// references deliver them; the config names the variables.
const (
	jwtSecretEnv    = "LAMBDA_TEST_JWT_SECRET"
	backendTokenEnv = "LAMBDA_TEST_BACKEND_TOKEN"
	backendToken    = "backend-token-from-secrets-manager"
)

var jwtSecret = []byte("lambda-test-secret-0123456789abcdef0123")

// fixture is one gateway deployment: two real backends ("gateway-one" has
// the streaming tools) behind a "demo" vhost with JWT auth, its config as
// a file and inline YAML, and the environment that carries the secrets.
type fixture struct {
	t          *testing.T
	backends   map[string]*testsupport.Backend
	configYAML string
	configPath string
}

func newFixture(t *testing.T) *fixture {
	return newFixtureWith(t, testsupport.BackendOptions{})
}

// newFixtureWith is newFixture with both backends built from opts (the
// names and gateway-one's streaming tools are the fixture's).
func newFixtureWith(t *testing.T, opts testsupport.BackendOptions) *fixture {
	t.Helper()
	one, two := opts, opts
	one.Name, one.StreamingTools = "gateway-one", true
	two.Name = "gateway-two"
	f := &fixture{t: t, backends: map[string]*testsupport.Backend{
		"gateway-one": testsupport.StartBackend(t, one),
		"gateway-two": testsupport.StartBackend(t, two),
	}}
	// allowed_hosts lists the domains Lambda puts in Host: the Function
	// URL's, the APIs', the ALB's name; and loopback for cmd/gateway.
	f.configYAML = fmt.Sprintf(`session_ttl: 10m
allowed_hosts: [%s, %s, %s, %s, 127.0.0.1, localhost]
auth:
  mode: jwt
  jwt:
    issuer: %s
    audience: %s
    hs_secret_env: %s
virtual_hosts:
  demo:
    backends:
      gateway-one:
        url: %s
        add_headers: {X-Backend-Token: "${%s}"}
      gateway-two:
        url: %s
`, functionURLDomain, httpAPIDomain, restAPIDomain, albHost,
		testsupport.JWTIssuer, testsupport.JWTAudience, jwtSecretEnv,
		f.backends["gateway-one"].URL, backendTokenEnv, f.backends["gateway-two"].URL)
	f.configPath = filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(f.configPath, []byte(f.configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// secrets is the environment both the function and cmd/gateway get.
func (f *fixture) secrets() []string {
	return []string{jwtSecretEnv + "=" + string(jwtSecret), backendTokenEnv + "=" + backendToken}
}

// lambdaEnv is the function's environment for a mode ("" leaves
// MCPGW_LAMBDA_MODE unset: the default) with the config inline.
func (f *fixture) lambdaEnv(mode string, extra ...string) []string {
	env := append(f.secrets(), envConfigYAML+"="+f.configYAML, envRedisURL+"="+redisSrv.URL())
	if mode != "" {
		env = append(env, envMode+"="+mode)
	}
	return append(env, extra...)
}

// startPlain runs cmd/gateway on the same Redis and config.
func (f *fixture) startPlain() *plainHTTP {
	f.t.Helper()
	bin := testsupport.BuildBinary(f.t, "github.com/mcpgw/gateway/cmd/gateway")
	p := testsupport.StartGateway(f.t, bin,
		[]string{"--config", f.configPath, "--redis-url", redisSrv.URL(), "--reload-interval", "0"},
		f.secrets())
	return &plainHTTP{base: strings.TrimRight(p.URL, "/")}
}

// client is a hand-written MCP client for sub on the "demo" vhost, for
// test t: each request of its session may take any endpoint.
func (f *fixture) client(t testing.TB, sub string) *testsupport.Client {
	return &testsupport.Client{T: t, VHost: "demo", Token: testsupport.MintJWT(t, jwtSecret, testsupport.StdClaims(sub))}
}
