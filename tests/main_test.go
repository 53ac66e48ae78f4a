// Package tests holds end-to-end tests: real gateway processes on a real
// Redis, real go-sdk backends, real MCP clients, and a load balancer with
// no affinity in front.
package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	if testsupport.Short() {
		fmt.Println("skipped under -short: every test here runs processes")
		os.Exit(0)
	}
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	testsupport.Cleanup()
	os.Exit(code)
}

const jwtSecretEnv = "E2E_JWT_SECRET"

// configHead starts every cluster config: a 10-minute session TTL, the
// loopback Host allow-list, JWT auth whose secret is in jwtSecretEnv, and
// the "virtual_hosts:" key, whose entries follow.
func configHead() string {
	return `session_ttl: 10m
allowed_hosts: [127.0.0.1, localhost]
auth:
  mode: jwt
  jwt:
    issuer: mcpgateway
    audience: mcpgateway-api
    hs_secret_env: ` + jwtSecretEnv + "\nvirtual_hosts:\n"
}

var jwtSecret = []byte("e2e-secret-0123456789abcdef0123456789")

// cluster is a set of gateway processes sharing one Redis and one config.
type cluster struct {
	t        *testing.T
	bin      string
	config   string
	backends map[string]*testsupport.Backend
	prefix   string
}

// newCluster writes a config with one "demo" vhost over two real backends.
func newCluster(t *testing.T) *cluster {
	return newClusterWith(t, testsupport.BackendOptions{})
}

// newClusterWith is newCluster with backends built from opts.
func newClusterWith(t *testing.T, opts testsupport.BackendOptions) *cluster {
	return newClusterOf(t, opts, opts)
}

// newClusterOf is newCluster with gateway-one built from one and
// gateway-two from two.
func newClusterOf(t *testing.T, one, two testsupport.BackendOptions) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	for k, o := range map[string]testsupport.BackendOptions{"gateway-one": one, "gateway-two": two} {
		o.Name = k
		c.backends[k] = testsupport.StartBackend(t, o)
	}
	cfg := fmt.Sprintf(`%s  demo:
    backends:
      gateway-one:
        url: %s
        tool_name_aliases: {Public.Tool: get_stats}
      gateway-two:
        url: %s
`, configHead(), c.backends["gateway-one"].URL, c.backends["gateway-two"].URL)
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(cfg)
	return c
}

func (c *cluster) writeConfig(cfg string) {
	c.t.Helper()
	if err := os.WriteFile(c.config, []byte(cfg), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// start launches one more gateway instance on the shared Redis.
func (c *cluster) start() *testsupport.GatewayProcess {
	c.t.Helper()
	return testsupport.StartGateway(c.t, c.bin,
		[]string{"--config", c.config, "--redis-url", redisSrv.URL()},
		[]string{jwtSecretEnv + "=" + string(jwtSecret)})
}

func (c *cluster) token(sub string) string {
	return testsupport.MintJWT(c.t, jwtSecret, testsupport.StdClaims(sub))
}

// client is a hand-written MCP client for sub on the "demo" vhost: each
// request of its session may go to any instance.
func (c *cluster) client(sub string) *testsupport.Client {
	return &testsupport.Client{T: c.t, Token: c.token(sub)}
}

func mcpURL(base string) string { return strings.TrimRight(base, "/") + "/servers/demo/mcp" }
