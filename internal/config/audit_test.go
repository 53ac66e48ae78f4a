package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfig_Audit(t *testing.T) {
	if cfg := mustParse(t, minimal); cfg.Audit.Output != "" {
		t.Fatalf("audit on by default: %+v", cfg.Audit)
	}
	cfg := mustParse(t, "audit:\n  output: stdout\n  trusted_proxies: [10.0.0.0/8, 192.0.2.7]\n"+minimal)
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}
	if a := cfg.Audit; a.Output != "stdout" || a.Arguments != AuditArgumentsHash || a.Buffer != DefaultAuditBuffer ||
		len(a.TrustedProxies) != 2 || a.TrustedProxies[0] != want[0] || a.TrustedProxies[1] != want[1] {
		t.Fatalf("audit %+v", a)
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"no output":     {"audit:\n  arguments: full\n", "audit.output: required"},
		"bad arguments": {"audit:\n  output: stderr\n  arguments: some\n", `audit.arguments: "some" is not one of hash, none, full (line 3)`},
		"bad proxy":     {"audit:\n  output: stderr\n  trusted_proxies: [nope]\n", `audit.trusted_proxies[0]: "nope" is not an IP address or CIDR prefix`},
		"zero buffer":   {"audit:\n  output: stderr\n  buffer: 0\n", "audit.buffer: must be between 1 and 1000000"},
		"unknown field": {"audit:\n  output: stderr\n  format: csv\n", "audit.format: unknown field"},
	} {
		t.Run(name, func(t *testing.T) { checkErr(t, c.yaml+minimal, c.want) })
	}
}

// A file output is taken from the config's directory, and refused for
// AWS Lambda (a read-only file system; stdout reaches CloudWatch).
func TestConfig_AuditFileIsRelativeAndNotForLambda(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte("audit:\n  output: logs/audit.log\n"+minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Audit.Output != filepath.Join(dir, "logs", "audit.log") {
		t.Fatalf("output %q, want it under the config's directory", cfg.Audit.Output)
	}
	if err := cfg.CheckLambda(); err == nil || !strings.Contains(err.Error(), "audit.output") {
		t.Fatalf("CheckLambda: %v, want audit.output refused", err)
	}
}

// The audit guide's block is a valid config section.
func TestConfig_GuideAuditBlockParses(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "# The audit trail\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 || !strings.HasPrefix(block, "audit:") {
		t.Fatalf("no audit yaml block in docs/guide/audit.md")
	}
	if cfg := mustParse(t, block+minimal); cfg.Audit.Output != "stdout" {
		t.Fatalf("the guide's audit block parsed as %+v", cfg.Audit)
	}
}
