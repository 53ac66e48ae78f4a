package tests

// examples/: every directory is a use case a newcomer copies, so every
// config there must pass `gateway check` as written (with the environment
// its README documents), start with the schema header editors use, and
// come with a README; every compose file must hang together. The runnable
// examples are also started and called through (examples_smoke_test.go).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// exampleSchemaHeader is the first line of every example config.
const exampleSchemaHeader = "# yaml-language-server: $schema=../../docs/reference/gateway.schema.json"

// exampleEnv is the environment each example needs for `gateway check`
// (secrets named by *_env fields and ${VAR} references). Each variable
// must be named in the example's README, so a reader knows to set it.
var exampleEnv = map[string][]string{
	"multi-instance-redis": {"MCPGW_JWT_SECRET=example-secret-0123456789abcdef0123456789"},
	"user-signin": {
		"MCPGW_USER_TOKEN_KEY=c2VhbGluZy1rZXktZm9yLXRoZS1lMmUtdGVzdHMtMzI=",
		"MCPGW_LOGIN_SECRET=example-login-secret",
		"GITHUB_CLIENT_SECRET=example-github-secret",
	},
	"lambda": {"MCPGW_BACKEND_TOKEN=example-backend-token"},
}

// exampleCheckFlags are extra `gateway check` flags per example.
var exampleCheckFlags = map[string][]string{
	"lambda": {"--lambda"},
}

// exampleNames lists the directories of examples/ that hold a gateway.yaml.
func exampleNames(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(repoPath("examples", "*", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range matches {
		names = append(names, filepath.Base(filepath.Dir(m)))
	}
	slices.Sort(names)
	return names
}

// The directories the docs link to (docs/guide/examples.md) all exist.
var wantExamples = []string{"auth0", "cognito", "entra-id", "jwks-access-limits", "keycloak", "lambda",
	"multi-instance-redis", "okta", "openapi", "stdio-npx", "tasks", "user-signin"}

func TestExamples_EveryConfigPassesCheck(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	names := exampleNames(t)
	for _, want := range wantExamples {
		if !slices.Contains(names, want) {
			t.Errorf("examples/%s/gateway.yaml is missing", want)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join("..", "examples", name, "gateway.yaml")
			first, _, _ := strings.Cut(string(mustRead(t, "examples", name, "gateway.yaml")), "\n")
			if first != exampleSchemaHeader {
				t.Errorf("first line %q, want %q", first, exampleSchemaHeader)
			}
			readme := string(mustRead(t, "examples", name, "README.md"))
			for _, kv := range exampleEnv[name] {
				if v, _, _ := strings.Cut(kv, "="); !strings.Contains(readme, v) {
					t.Errorf("README.md does not name %s, which the config needs", v)
				}
			}
			args := append([]string{"check", "--config", cfg}, exampleCheckFlags[name]...)
			stdout, stderr, code := runBinary(t, bin, exampleEnv[name], args...)
			if code != 0 || !strings.Contains(stdout, ": ok: ") {
				t.Fatalf("gateway %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
			}
		})
	}
	// Without its documented environment a config that needs one fails
	// check, naming the variable: the table above is not decoration.
	for name, env := range exampleEnv {
		v, _, _ := strings.Cut(env[0], "=")
		if _, set := os.LookupEnv(v); set {
			continue // the test's own environment has it: nothing to show
		}
		args := append([]string{"check", "--config", filepath.Join("..", "examples", name, "gateway.yaml")}, exampleCheckFlags[name]...)
		_, stderr, code := runBinary(t, bin, nil, args...)
		if code == 0 || !strings.Contains(stderr, v) {
			t.Errorf("examples/%s without %s: exit %d, stderr %q", name, v, code, stderr)
		}
	}
}

// The schema each example's first line names accepts the example, so an
// editor running yaml-language-server shows no false error on a config
// the gateway takes. The schema is generated from the config types
// (docs/reference); until it is there, there is nothing to check.
func TestExamples_ConfigsMatchTheSchema(t *testing.T) {
	path := repoPath("docs", "reference", "gateway.schema.json")
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is not generated yet", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://mcpgw.test/gateway.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("https://mcpgw.test/gateway.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range exampleNames(t) {
		var cfg any
		if err := yaml.Unmarshal(mustRead(t, "examples", name, "gateway.yaml"), &cfg); err != nil {
			t.Fatalf("examples/%s/gateway.yaml: %v", name, err)
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("examples/%s/gateway.yaml as JSON: %v", name, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("examples/%s/gateway.yaml does not match the schema: %v", name, err)
		}
	}
}

// Every compose file under examples/ parses, builds only stages that
// infra/Dockerfile defines from the repository root, mounts files that
// exist, depends only on its own services, and passes its gateways a
// Redis URL naming its redis service; a gateway config it mounts reaches
// backends by service name, and an nginx config it mounts balances over
// exactly its gateway services.
func TestExamples_ComposeFilesHangTogether(t *testing.T) {
	files, _ := filepath.Glob(repoPath("examples", "*", "compose.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples/*/compose.yaml")
	}
	stages := dockerStageNames(t)
	for _, file := range files {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var f composeFile
			if err := yaml.Unmarshal(mustRead(t, "examples", filepath.Base(dir), "compose.yaml"), &f); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			gateways := composeServicesByTarget(f, "gateway")
			if len(gateways) < 2 {
				t.Fatalf("gateway services %q: want two replicas or more", gateways)
			}
			for name, s := range f.Services {
				checkExampleService(t, dir, name, s, f, stages)
			}
			for _, g := range gateways {
				s := f.Services[g]
				if u, _ := flagValue(s.Command, "--redis-url"); u != "redis://redis:6379" || f.Services["redis"].Image == "" {
					t.Errorf("%s: --redis-url %q, want redis://redis:6379 and a redis service", g, u)
				}
				cfg, _ := flagValue(s.Command, "--config")
				for _, v := range s.Volumes {
					if parts := strings.Split(v, ":"); len(parts) >= 2 && parts[1] == cfg {
						checkComposeGatewayConfig(t, filepath.Join(dir, parts[0]), f)
					}
				}
			}
		})
	}
}

// checkExampleService checks one compose service of an example.
func checkExampleService(t *testing.T, dir, name string, s composeService, f composeFile, stages []string) {
	t.Helper()
	if s.Build != nil {
		if _, err := os.Stat(filepath.Join(dir, s.Build.Context, "go.mod")); err != nil {
			t.Errorf("%s: build context %q is not the repository root", name, s.Build.Context)
		}
		if s.Build.Dockerfile != "infra/Dockerfile" || !slices.Contains(stages, s.Build.Target) {
			t.Errorf("%s: builds %s target %q; infra/Dockerfile has %q", name, s.Build.Dockerfile, s.Build.Target, stages)
		}
	} else if s.Image == "" {
		t.Errorf("%s: neither build nor image", name)
	}
	for _, v := range s.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if strings.HasPrefix(src, ".") {
			if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
				t.Errorf("%s: mounts %s, which does not exist", name, src)
			}
			if strings.HasSuffix(dst, "nginx.conf") || strings.HasPrefix(dst, "/etc/nginx/nginx.conf") {
				checkNginxUpstreams(t, filepath.Join(dir, src), composeServicesByTarget(f, "gateway"))
			}
		}
	}
	for dep := range s.DependsOn {
		if _, ok := f.Services[dep]; !ok {
			t.Errorf("%s depends on %s, which is not a service", name, dep)
		}
	}
}

// checkComposeGatewayConfig checks that the config a compose gateway
// mounts names its backends by compose service.
func checkComposeGatewayConfig(t *testing.T, path string, f composeFile) {
	t.Helper()
	var raw struct {
		VirtualHosts map[string]struct {
			Backends map[string]struct {
				URL string `yaml:"url"`
			} `yaml:"backends"`
		} `yaml:"virtual_hosts"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, vh := range raw.VirtualHosts {
		for key, b := range vh.Backends {
			host := strings.TrimPrefix(strings.TrimPrefix(b.URL, "http://"), "https://")
			host, _, _ = strings.Cut(host, ":")
			if _, ok := f.Services[host]; !ok {
				t.Errorf("%s: backend %s at %s is not a compose service", path, key, b.URL)
			}
		}
	}
}

// checkNginxUpstreams checks that an nginx config balances over exactly
// the gateway services, with no affinity.
func checkNginxUpstreams(t *testing.T, path string, gateways []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := parseNginx(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var servers []string
	walkNginx(ds, nil, func(d *nginxDirective, parents []*nginxDirective) {
		switch {
		case d.name == "server" && len(parents) > 0 && parents[len(parents)-1].name == "upstream":
			host, _, _ := strings.Cut(d.args[0], ":")
			servers = append(servers, host)
		case d.name == "ip_hash" || d.name == "hash" || d.name == "sticky":
			t.Errorf("%s: %s gives sessions an affinity the gateway does not need", path, d.name)
		}
	})
	slices.Sort(servers)
	if !slices.Equal(servers, gateways) {
		t.Errorf("%s balances over %q, want the gateway services %q", path, servers, gateways)
	}
}
