package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
)

// withPolicy builds a config whose vhost "demo" has the given block (at
// the vhost's indentation: plugins:, rate_limits:) and two backends.
func withPolicy(block string) string {
	return "auth:\n  mode: none\nvirtual_hosts:\n  demo:\n" + indent(block, "    ") +
		"    backends:\n      gateway-one:\n        url: http://127.0.0.1:9001/mcp\n      gateway-two:\n        url: http://127.0.0.1:9002/mcp\n"
}

func TestConfig_PluginsAndRateLimitsAreCompiled(t *testing.T) {
	cfg := mustParse(t, withPolicy(`
plugins:
  - type: deny_pattern
    in: both
    patterns: ["(?i)drop\\s+table"]
  - type: redact
    builtin: [secrets, email]
    patterns: ["case-\\d+"]
  - type: max_result_bytes
    limit: 1048576
  - type: validate_arguments
rate_limits:
  - per: principal
    tools: ["gateway-one-*"]
    limit: 60
    window: 1m
  - per: vhost
    limit: 1000
    window: 1s
`))
	vh := cfg.VirtualHosts["demo"]
	if len(vh.Hooks) != 4 {
		t.Fatalf("%d hooks, want 4", len(vh.Hooks))
	}
	if _, ok := vh.Hooks[1].(hook.ProgressHook); !ok {
		t.Fatal("redact does not see progress")
	}
	want := []policy.RateLimit{
		{Per: "principal", Tools: []string{"gateway-one-*"}, Limit: 60, Window: time.Minute},
		{Per: "vhost", Limit: 1000, Window: time.Second},
	}
	if got := vh.RateLimits.Limits(); !reflect.DeepEqual(got, want) {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	if none := mustParse(t, minimal).VirtualHosts["demo"]; none.Hooks != nil || none.RateLimits != nil {
		t.Fatal("a vhost without policy got some")
	}
}

// Each problem names the file, the field path and its line.
func TestConfig_PolicyErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		want        []string
	}{
		{"bad regex", `
plugins:
  - type: deny_pattern
    in: arguments
    patterns: ["ok", "(unclosed"]
`, []string{"virtual_hosts.demo.plugins[0].patterns[1]", "error parsing regexp", "(line 8)"}},
		{"unknown type", `
plugins:
  - type: validate_arguments
  - type: shout
`, []string{"virtual_hosts.demo.plugins[1].type", `unknown plugin "shout"`, "(line 7)"}},
		{"field of another type", `
plugins:
  - type: redact
    builtin: [secrets]
    limit: 10
`, []string{"virtual_hosts.demo.plugins[0].limit", "does not apply to type redact", "(line 8)"}},
		{"unknown builtin", `
plugins:
  - type: redact
    builtin: [phone]
`, []string{"virtual_hosts.demo.plugins[0].builtin[0]", `unknown set "phone"`}},
		{"limit zero", `
plugins:
  - type: max_result_bytes
    limit: 0
`, []string{"virtual_hosts.demo.plugins[0].limit", "at least 1"}},
		{"unknown field", `
plugins:
  - type: redact
    builtins: [secrets]
`, []string{"virtual_hosts.demo.plugins[0].builtins", "unknown field"}},
		{"rate per", `
rate_limits:
  - per: user
    limit: 5
    window: 1m
`, []string{"virtual_hosts.demo.rate_limits[0].per", `unknown kind "user"`, "(line 6)"}},
		{"rate glob", `
rate_limits:
  - per: principal_tool
    tools: ["gateway-one-*", ""]
    limit: 5
    window: 1m
`, []string{"virtual_hosts.demo.rate_limits[0].tools[1]", "empty pattern"}},
		{"rate window", `
rate_limits:
  - per: vhost
    limit: 5
    window: soon
`, []string{"virtual_hosts.demo.rate_limits[0].window", "is not a duration", "(line 8)"}},
		{"rate batch above the limit", `
rate_limits:
  - per: principal
    limit: 5
    window: 1m
    batch: 6
`, []string{"virtual_hosts.demo.rate_limits[0].batch", "between 1 and the limit (5)", "(line 9)"}},
		{"rate batch zero", `
rate_limits:
  - per: principal
    limit: 5
    window: 1m
    batch: 0
`, []string{"virtual_hosts.demo.rate_limits[0].batch", "between 1 and the limit"}},
		{"rate window too short", `
rate_limits:
  - per: vhost
    limit: 5
    window: 10ms
`, []string{"virtual_hosts.demo.rate_limits[0].window", "at least 1s"}},
		{"rate limit missing", `
rate_limits:
  - per: vhost
    window: 1m
`, []string{"virtual_hosts.demo.rate_limits[0].limit", "missing"}},
		{"rate limit not an integer", `
rate_limits:
  - per: vhost
    limit: many
    window: 1m
`, []string{"virtual_hosts.demo.rate_limits[0].limit", "must be an integer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, withPolicy(tc.block), tc.want...)
		})
	}
}

// The access guide's plugin and rate-limit examples are configs the gateway
// takes.
func TestConfig_GuidePolicyExamplesParse(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/access-and-limits.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		section string
		check   func(*router.VirtualHost) bool
	}{
		{"\n## Plugins\n", func(vh *router.VirtualHost) bool { return len(vh.Hooks) == 4 }},
		{"\n## Rate limits\n", func(vh *router.VirtualHost) bool { return len(vh.RateLimits.Limits()) == 3 }},
	} {
		_, section, ok := strings.Cut(string(readme), tc.section)
		if !ok {
			t.Fatalf("the access guide has no %q section", tc.section)
		}
		_, block, ok := strings.Cut(section, "```yaml\n")
		block, _, ok2 := strings.Cut(block, "```")
		if !ok || !ok2 {
			t.Fatalf("the guide's %q section has no yaml example", tc.section)
		}
		cfg := mustParse(t, "auth: {mode: none}\n"+block)
		if !tc.check(cfg.VirtualHosts["demo"]) {
			t.Fatalf("guide %q example: %+v", tc.section, cfg.VirtualHosts["demo"])
		}
	}
}
