package tests

// The operator's commands and flags, run as a user would run them: the
// built binary, its exit status, its stdout and stderr.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// runBinary runs bin with args and returns stdout, stderr and the exit
// status; it fails the test if the command does not end within a minute.
func runBinary(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return out.String(), errOut.String(), code
}

// A binary built as the Makefile builds it carries the stamped version
// and commit: --version prints them with the Go version, the metric
// mcpgw_build_info has them, and clients see the version as serverInfo.
func TestCLI_VersionIsStampedAtBuildTime(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gateway")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test -X main.commit=0123abcd", "-o", bin, "github.com/mcpgw/gateway/cmd/gateway")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stdout, stderr, code := runBinary(t, bin, nil, "--version")
	if want := fmt.Sprintf("gateway v9.8.7-test (commit 0123abcd, %s)\n", runtime.Version()); code != 0 || stdout != want || stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q (want %q), stderr %q", code, stdout, want, stderr)
	}

	p := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	want := map[string]string{"version": "v9.8.7-test", "commit": "0123abcd", "goversion": runtime.Version()}
	if got := testsupport.MetricSum(testsupport.ScrapeMetrics(t, p.URL), "mcpgw_build_info", want); got != 1 {
		t.Fatalf("mcpgw_build_info%v = %v, want 1", want, got)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "version-test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: mcpURL(p.URL), DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ServerInfo.Version; v != "v9.8.7-test" {
		t.Fatalf("serverInfo.version %q", v)
	}
}

// --help goes to stdout with exit status 0; mistakes go to stderr with
// exit status 1 and name what would have been valid.
func TestCLI_HelpAndMistakesNameTheValidValues(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--demo", "--help"}} {
		stdout, stderr, code := runBinary(t, bin, nil, args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		for _, want := range []string{"gateway: one MCP endpoint per virtual host", "Usage:", "Examples:", "gateway check --config", "--version", "-log-format", "MCPGW_LOG_FORMAT"} {
			if !strings.Contains(stdout, want) {
				t.Fatalf("%v: stdout lacks %q:\n%s", args, want, stdout)
			}
		}
	}
	stdout, _, code := runBinary(t, bin, nil, "check", "--help")
	if code != 0 || !strings.Contains(stdout, "Usage: gateway check --config FILE") {
		t.Fatalf("check --help: exit %d:\n%s", code, stdout)
	}

	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"unknown flag", nil, []string{"--verbose"}, []string{"-verbose", "valid flags: --admin-listen", "--config", "--log-format", "--log-level"}},
		{"unknown argument", nil, []string{"--demo", "serve"}, []string{`unexpected argument "serve"`, "commands: check"}},
		{"unknown log level", nil, []string{"--demo", "--log-level", "verbose"}, []string{`unknown level "verbose"`, "valid: debug, info, warn, error"}},
		{"unknown log level from env", []string{"MCPGW_LOG_LEVEL=loud"}, []string{"--demo"}, []string{`unknown level "loud"`, "valid: debug, info, warn, error"}},
		{"unknown log format", nil, []string{"--demo", "--log-format", "xml"}, []string{`unknown format "xml"`, "valid: text, json"}},
		{"unknown log format from env", []string{"MCPGW_LOG_FORMAT=logfmt"}, []string{"--demo"}, []string{`unknown format "logfmt"`, "valid: text, json"}},
		{"no config", nil, nil, []string{"--config", "--demo", "--help"}},
		{"check: unknown flag", nil, []string{"check", "--listen", ":1"}, []string{"valid flags: --config, --redis-url"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, bin, tc.env, tc.args...)
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing on stdout", code, stdout)
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "gateway: ") {
				t.Fatalf("want one line starting with \"gateway: \", got:\n%s", stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Fatalf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// `gateway check` validates what start-up validates, with the same
// message, and exits 0 or 1 without listening or contacting the store.
func TestCLI_CheckValidatesLikeStartup(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	dir := t.TempDir()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "redis://" + closed.Addr().String()
	closed.Close()

	const valid = "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      one: {url: 'http://127.0.0.1:9/mcp'}\n"
	cases := []struct {
		name, yaml string
		redisURL   string
		want       []string // in the message; nil: the config is valid
	}{
		{"valid", valid, "", nil},
		{"valid, the store is not contacted", valid, unreachable, nil},
		{"backend URL without scheme", "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      one: {url: '127.0.0.1:9001/mcp'}\n",
			"", []string{`virtual_hosts.demo.backends.one.url: "127.0.0.1:9001/mcp" is not a valid URL (missing scheme? write "http://127.0.0.1:9001/mcp") (line 5)`}},
		{"tab in YAML", "auth:\n  mode: none\n\tvirtual_hosts: {}\n", "", []string{"invalid YAML: found a tab character that violates indentation (line 3)"}},
		{"key indented wrong", "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      one:\n        url: http://x/mcp\n       timeout: 3s\n", "", []string{"invalid YAML", "(line 7)"}},
		{"access rule that does not compile", "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    access:\n      - when: \"claims.groups.exists(\"\n        allow: ['*']\n    backends:\n      one: {url: 'http://127.0.0.1:9/mcp'}\n",
			"", []string{"virtual_hosts.demo.access[0].when", "(line 5)"}},
		{"JWT secret variable unset", "auth:\n  mode: jwt\n  jwt: {issuer: i, audience: a, hs_secret_env: MCPGW_TEST_UNSET_SECRET}\nvirtual_hosts:\n  demo:\n    backends:\n      one: {url: 'http://127.0.0.1:9/mcp'}\n",
			"", []string{"auth.jwt.hs_secret_env", "MCPGW_TEST_UNSET_SECRET"}},
		{"issuers whose principals could be one", "auth:\n  mode: jwt\n  issuers:\n    - {issuer: rt3-x, audience: a, jwks_url: 'https://idp.example/keys'}\n    - {issuer: 'rt3-x#a', audience: a, jwks_url: 'https://idp.example/keys'}\nvirtual_hosts:\n  demo:\n    backends:\n      one: {url: 'http://127.0.0.1:9/mcp'}\n",
			"", []string{`auth.issuers[1].issuer: issuer "rt3-x#a" holds a '#'`, "(line 5)"}},
		{"Redis URL without scheme", valid, "localhost:6379", []string{`--redis-url: store: redis URL "localhost:6379": missing scheme`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"check", "--config", path}
			if tc.redisURL != "" {
				args = append(args, "--redis-url", tc.redisURL)
			}
			stdout, stderr, code := runBinary(t, bin, nil, args...)
			if tc.want == nil {
				if code != 0 || stderr != "" || !strings.Contains(stdout, path+": ok: 1 virtual host(s), 1 backend(s), auth none") {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
				}
				return
			}
			if code != 1 || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing on stdout", code, stdout)
			}
			for _, want := range tc.want {
				configError := tc.redisURL == ""
				if !strings.Contains(stderr, want) || configError && !strings.Contains(stderr, path) {
					t.Fatalf("stderr does not name the file and %q:\n%s", want, stderr)
				}
			}
			// Start-up refuses the same config with the same message.
			startArgs := []string{"--config", path, "--listen", "127.0.0.1:0"}
			if tc.redisURL != "" {
				startArgs = append(startArgs, "--redis-url", tc.redisURL)
			}
			_, startErr, startCode := runBinary(t, bin, nil, startArgs...)
			if startCode != 1 || startErr != stderr {
				t.Fatalf("start-up: exit %d, message\n%s\nwant the check's:\n%s", startCode, startErr, stderr)
			}
		})
	}
}

// `gateway check --lambda` refuses what the Lambda function's init refuses
// (a stdio backend), with the field and line; without it the same config
// is valid for a server.
func TestCLI_CheckLambdaRefusesWhatAFunctionCannotRun(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	dir := t.TempDir()
	write := func(name, yaml string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stdio := write("stdio.yaml", "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      web: {url: 'http://127.0.0.1:9/mcp'}\n      files:\n        transport: stdio\n        command: /bin/true\n")
	httpOnly := write("http.yaml", "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      web: {url: 'http://127.0.0.1:9/mcp'}\n")

	if stdout, stderr, code := runBinary(t, bin, nil, "check", "--config", stdio); code != 0 || !strings.Contains(stdout, "ok: 1 virtual host(s), 2 backend(s)") {
		t.Fatalf("check of a server config with a stdio backend: exit %d, %q %q", code, stdout, stderr)
	}
	stdout, stderr, code := runBinary(t, bin, nil, "check", "--lambda", "--config", stdio)
	if code != 1 || stdout != "" {
		t.Fatalf("check --lambda: exit %d, stdout %q; want 1 and nothing on stdout", code, stdout)
	}
	for _, want := range []string{stdio, "virtual_hosts.demo.backends.files.transport", "not supported on AWS Lambda", "(line 7)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check --lambda: %q lacks %q", stderr, want)
		}
	}
	if stdout, stderr, code := runBinary(t, bin, nil, "check", "--lambda", "--config", httpOnly); code != 0 || !strings.Contains(stdout, "auth none, fits AWS Lambda") {
		t.Fatalf("check --lambda of HTTP backends: exit %d, %q %q", code, stdout, stderr)
	}
}

// A store URL that can never work stops start-up with one clear line and
// exit status 1; a store that is only not up yet does not.
func TestCLI_StoreThatCanNeverWorkStopsStartup(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	locked, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locked.Stop)
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfg, []byte("auth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n      one: {url: 'http://127.0.0.1:9/mcp'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, url, want string }{
		{"auth refused", "redis://:wrong-password@" + locked.Addr, "WRONGPASS"},
		{"no password", "redis://" + locked.Addr, "NOAUTH"},
		{"database index out of range", "redis://" + redisSrv.Addr + "/99", "DB index"},
		{"unknown host", "redis://no-such-host.invalid:6379", "no such host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := runBinary(t, bin, nil, "--config", cfg, "--redis-url", tc.url, "--listen", "127.0.0.1:0")
			if code != 1 || strings.Contains(stdout, "listening") {
				t.Fatalf("exit %d; stdout %q; stderr:\n%s", code, stdout, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "gateway: the session store cannot work with this URL") || !strings.Contains(last, tc.want) {
				t.Fatalf("last line %q does not say why (%s):\n%s", last, tc.want, stderr)
			}
			if strings.Contains(stderr, "wrong-password") || strings.Contains(stderr, "right-password") {
				t.Fatalf("a password reached the output:\n%s", stderr)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Fatalf("took %v to give up", d)
			}
		})
	}

	// Refused connections may be Redis starting: the gateway serves, and
	// /readyz says 503 until the store answers.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	p := testsupport.StartGateway(t, bin, []string{"--config", cfg, "--redis-url", "redis://" + addr}, nil)
	res, err := http.Get(p.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Fatalf("/readyz %d with the store down, want 503", res.StatusCode)
	}
	if !regexp.MustCompile(`session store not reachable yet`).MatchString(p.Output()) {
		t.Fatalf("no warning about the store:\n%s", p.Output())
	}
}

// The first-config guide's minimal config is one the gateway takes as it
// is.
func TestDocs_GuideMinimalConfigIsValid(t *testing.T) {
	guide := string(mustRead(t, "docs", "guide", "first-config.md"))
	_, section, ok := strings.Cut(guide, "\n## A minimal config\n")
	if !ok {
		t.Fatal("docs/guide/first-config.md has no minimal config section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 || !strings.Contains(block, "auth: {mode: none}") {
		t.Fatalf("no yaml example with auth mode none:\n%s", section)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	stdout, stderr, code := runBinary(t, bin, nil, "check", "--config", path)
	if code != 0 || !strings.Contains(stdout, "ok: 1 virtual host(s), 1 backend(s), auth none") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Each line is needed: without it the config is refused.
	for _, drop := range []string{"auth: {mode: none}", "url: http://127.0.0.1:9001/mcp"} {
		var kept []string
		for _, l := range strings.Split(block, "\n") {
			if !strings.Contains(l, drop) {
				kept = append(kept, l)
			}
		}
		if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, code := runBinary(t, bin, nil, "check", "--config", path); code != 1 {
			t.Errorf("without %q the config is still valid: the example has a line it does not need", drop)
		}
	}
}

// --debug-listen serves Go's runtime profiles on an address of its own,
// never on the gateway's port.
func TestCLI_DebugListenServesProfilesOnItsOwnPort(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	debug := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	gw := testsupport.StartGateway(t, bin, []string{"--demo", "--listen", "127.0.0.1:0", "--debug-listen", debug}, nil)
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := get("http://" + debug + "/debug/pprof/cmdline"); code != http.StatusOK || !strings.Contains(body, "--debug-listen") {
		t.Fatalf("debug listener: %d %q, want the command line", code, body)
	}
	if code, _ := get(gw.URL + "/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Fatalf("the gateway's own port served /debug/pprof: %d", code)
	}
	if !strings.Contains(gw.Output(), "debug listener started") {
		t.Fatalf("no start line for the debug listener:\n%s", gw.Output())
	}
	// A taken address stops start-up with the flag named.
	_, stderr, code := runBinary(t, bin, nil, "--demo", "--listen", "127.0.0.1:0", "--debug-listen", debug)
	if code == 0 || !strings.Contains(stderr, "--debug-listen") {
		t.Fatalf("debug address taken: exit %d, stderr %q", code, stderr)
	}
}
