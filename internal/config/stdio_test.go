package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router/upstream"
)

func TestStdio_ParsesCommandEnvAndPoolWithDefaults(t *testing.T) {
	setSecrets(t)
	cfg := mustParse(t, withBackends(`
files:
  transport: stdio
  command: ./bin/files-server
  args: [--root, /data]
  env: {API_TOKEN: "${MCPGW_TEST_BACKEND_ONE_TOKEN}", MODE: ro}
  cwd: work
  pool: {min: 0, max: 2, idle: 30s}
plain:
  transport: stdio
  command: npx
`))
	files := cfg.VirtualHosts["demo"].Backends["files"]
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := &upstream.StdioConfig{
		Command: filepath.Join(wd, "bin/files-server"),
		Args:    []string{"--root", "/data"},
		Env:     map[string]string{"API_TOKEN": testBackendToken, "MODE": "ro"},
		Dir:     filepath.Join(wd, "work"),
		Pool:    upstream.PoolConfig{Min: 0, Max: 2, Idle: 30 * time.Second},
	}
	if files.Transport != upstream.TransportStdio || files.URL != "" || !reflect.DeepEqual(files.Stdio, want) {
		t.Errorf("files = %+v %+v, want %+v", files.Config, files.Stdio, want)
	}
	plain := cfg.VirtualHosts["demo"].Backends["plain"].Stdio
	if plain.Command != "npx" || plain.Pool != (upstream.PoolConfig{Min: 1, Max: 4, Idle: 5 * time.Minute}) {
		t.Errorf("plain = %+v, want a PATH name and the default pool (min 1, max 4, idle 5m)", plain)
	}
}

func TestStdio_RelativePathsAreTakenFromTheConfigDirectory(t *testing.T) {
	cfg, err := Parse([]byte(withBackends("files:\n  transport: stdio\n  command: ./server\n  cwd: data\n")), "/etc/mcpgw/gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.VirtualHosts["demo"].Backends["files"].Stdio
	if s.Command != "/etc/mcpgw/server" || s.Dir != "/etc/mcpgw/data" {
		t.Errorf("command %q, cwd %q: want them under /etc/mcpgw", s.Command, s.Dir)
	}
}

func TestStdio_RefusesBadFieldsNamingThem(t *testing.T) {
	setSecrets(t)
	for _, tc := range []struct {
		name, backend string
		want          []string
	}{
		{"no command", "transport: stdio", []string{"backends.files.command", "required for transport stdio", "line 6"}},
		{"url too", "transport: stdio\ncommand: x\nurl: http://h/mcp", []string{"backends.files.url", "no use with transport stdio"}},
		{"headers", "transport: stdio\ncommand: x\nadd_headers: {X-A: b}", []string{"backends.files.add_headers", "pass values in env"}},
		{"credentials", "transport: stdio\ncommand: x\ncredentials: {client_credentials: {token_url: https://sts.example.com/t, client_id: a, client_secret_env: PATH}}", []string{"backends.files.credentials", "no use with transport stdio"}},
		{"session reuse", "transport: stdio\ncommand: x\nsession: reuse", []string{"backends.files.session", "shared by requests"}},
		{"session per-principal", "transport: stdio\ncommand: x\nsession: per-principal", []string{"backends.files.session", "per-principal has no meaning"}},
		{"bad env name", "transport: stdio\ncommand: x\nenv: {1BAD: v}", []string{"backends.files.env.1BAD", "not an environment variable name"}},
		{"unset env ref", "transport: stdio\ncommand: x\nenv: {A: \"${MCPGW_TEST_UNSET_VAR}\"}", []string{"backends.files.env.A", "MCPGW_TEST_UNSET_VAR is not set"}},
		{"max zero", "transport: stdio\ncommand: x\npool: {max: 0}", []string{"backends.files.pool.max", "between 1 and 64"}},
		{"min above max", "transport: stdio\ncommand: x\npool: {min: 3, max: 2}", []string{"backends.files.pool.min", "at most pool.max (2)"}},
		{"short idle", "transport: stdio\ncommand: x\npool: {idle: 10ms}", []string{"backends.files.pool.idle", "at least 1s"}},
		{"bad pool type", "transport: stdio\ncommand: x\npool: {max: many}", []string{"backends.files.pool.max", "must be an integer"}},
		{"stdio fields on http", "url: http://h/mcp\ncommand: x\npool: {max: 2}", []string{"backends.files.command", "only for transport stdio", "backends.files.pool"}},
		{"unknown transport", "transport: pipe\ncommand: x", []string{"backends.files.transport", "want streamable-http, sse or stdio"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, withBackends("files:\n"+indent(tc.backend, "  ")), tc.want...)
		})
	}
}

func TestStdio_ErrorsNeverQuoteEnvValues(t *testing.T) {
	setSecrets(t)
	_, err := Parse([]byte(withBackends("files:\n  transport: stdio\n  command: x\n  env: {A: \"${MCPGW_TEST_BACKEND_ONE_TOKEN}\\u0000\"}\n")), src)
	if err == nil || strings.Contains(err.Error(), testBackendToken) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("error %v: want the NUL named and the value not", err)
	}
}

func TestStdio_CheckLambdaRefusesStdioBackendsNamingEach(t *testing.T) {
	cfg := mustParse(t, withBackends("files:\n  transport: stdio\n  command: x\nweb:\n  url: http://h/mcp\n"))
	err := cfg.CheckLambda()
	if err == nil {
		t.Fatal("CheckLambda accepted a stdio backend")
	}
	for _, want := range []string{src, "virtual_hosts.demo.backends.files.transport", "not supported on AWS Lambda", "line 7"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLambda: %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "backends.web") {
		t.Errorf("CheckLambda names the HTTP backend: %q", err)
	}
	if err := mustParse(t, minimal).CheckLambda(); err != nil {
		t.Errorf("CheckLambda on HTTP backends only: %v", err)
	}
}

// The backends guide's stdio example is a config the gateway takes.
func TestStdio_GuideExampleParses(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/backends.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## stdio backends\n")
	if !ok {
		t.Fatal("docs/guide/backends.md has no stdio section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the guide's stdio section has no yaml example")
	}
	cfg := mustParse(t, "auth: {mode: none}\n"+block)
	s := cfg.VirtualHosts["demo"].Backends["files"].Stdio
	if s == nil || s.Command != "npx" || s.Pool != (upstream.PoolConfig{Min: 1, Max: 4, Idle: 5 * time.Minute}) {
		t.Fatalf("guide example: %+v", s)
	}
}
