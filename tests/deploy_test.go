package tests

// Deployment artifacts: infra/Dockerfile, infra/k8s/, localdev/. There is
// no container engine or cluster in CI, so the files are parsed and checked
// for what makes horizontal scaling without affinity work (same config and
// Redis everywhere, probes on /readyz and /healthz, no sticky balancing,
// unbuffered SSE), and the topology localdev/docker-compose.yml describes
// is run with the binaries directly.

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
)

// repoPath is a path in the repository; tests run in tests/.
func repoPath(parts ...string) string {
	return filepath.Join(append([]string{".."}, parts...)...)
}

func mustRead(t *testing.T, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---------------------------------------------------------------------------
// localdev configs
// ---------------------------------------------------------------------------

// parseConfigFile runs the gateway's own config parser on a repository file.
func parseConfigFile(t *testing.T, parts ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(mustRead(t, parts...), repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestDeploy_LocaldevConfigs(t *testing.T) {
	t.Setenv("MCPGW_JWT_SECRET", "localdev-jwt-secret-0123456789abcdef0123")
	for file, mode := range map[string]string{"gateway.yaml": config.ModeNone, "gateway.jwt.yaml": config.ModeJWT} {
		cfg := parseConfigFile(t, "localdev", file)
		if cfg.Auth.Mode != mode {
			t.Errorf("%s: auth %s, want %s", file, cfg.Auth.Mode, mode)
		}
		if !slices.Contains(cfg.AllowedHosts, "localhost") {
			t.Errorf("%s: allowed_hosts %q lacks localhost", file, cfg.AllowedHosts)
		}
		demo := cfg.VirtualHosts["demo"]
		if demo == nil || len(demo.Backends) != 2 || demo.Backends["gateway-one"] == nil || demo.Backends["gateway-two"] == nil {
			t.Errorf("%s: want a demo vhost with backends gateway-one and gateway-two", file)
		}
	}
	// The two files differ in auth only.
	plain := parseConfigFile(t, "localdev", "gateway.yaml")
	jwt := parseConfigFile(t, "localdev", "gateway.jwt.yaml")
	plain.Source, jwt.Source, plain.Auth, jwt.Auth = "", "", config.Auth{}, config.Auth{}
	if !reflect.DeepEqual(plain, jwt) {
		t.Error("localdev/gateway.jwt.yaml differs from gateway.yaml in more than auth")
	}
}
