package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// The audit trail on Lambda: stdout (CloudWatch Logs), one line per routed
// request and refusal, both generations, flushed by each invocation
// before it ends (the emulator freezes nothing, but the flush is what
// makes the lines appear before the answer is in: checked at once, no
// polling).
func TestAudit_LinesOnStdoutUnderTheEmulator(t *testing.T) {
	t.Parallel()
	f := modernFixture(t)
	cfg := "audit:\n  output: stdout\n" + strings.Replace(f.configYAML, "  demo:\n", `  demo:
    access:
      - when: "claims.sub == 'mallory'"
        allow: ["gateway-one-*"]
      - allow: ["*"]
    plugins:
      - type: deny_pattern
        in: arguments
        patterns: ["(?i)drop\\s+table"]
    rate_limits:
      - per: principal
        tools: ["gateway-two-echo"]
        limit: 2
        window: 1h
`, 1)
	path := f.configPath + ".audit.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rie := startRIE(t, append(f.secrets(), envMode+"=apigw-v2", envConfig+"="+path, envRedisURL+"="+redisSrv.URL())...)
	ep := &httpAPI{rie: rie}

	legacy := f.client(t, "mallory")
	legacy.Initialize(ep, nil)
	legacy.Request(ep, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "hello"}})
	legacy.Request(ep, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "x"}})
	// The plugin's refusal counts against the limit (limits are counted
	// first): the third call is the one over it.
	trent := fmt.Sprintf("trent-%d", time.Now().UnixNano()) // rate limits live in Redis across runs
	modern := f.client(t, trent)
	modern.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "drop table t"}}, nil)
	modern.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "once"}}, nil)
	modern.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "twice"}}, nil)
	(&testsupport.Client{T: t, VHost: "demo"}).ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-echo"}, nil)

	want := []struct{ principal, name, outcome, protocol string }{
		{"mallory", "gateway-one-echo", audit.OutcomeOK, "2025-11-25"},
		{"mallory", "gateway-two-echo", audit.OutcomeDenied, "2025-11-25"},
		{trent, "gateway-two-echo", audit.OutcomeDenied, "2026-07-28"},
		{trent, "gateway-two-echo", audit.OutcomeOK, "2026-07-28"},
		{trent, "gateway-two-echo", audit.OutcomeRateLimited, "2026-07-28"},
		{"", "", audit.OutcomeUnauthenticated, "2026-07-28"},
	}
	var got []map[string]any
	deadline := time.Now().Add(5 * time.Second) // the emulator's log pipe, not the gateway, may lag
	for {
		got = got[:0]
		for _, l := range strings.Split(rie.Output(), "\n") {
			i := strings.Index(l, `{"time":`)
			if i < 0 || !strings.Contains(l, `"outcome":`) {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l[i:]), &m); err != nil {
				t.Fatalf("an audit line that is not JSON: %q", l)
			}
			got = append(got, m)
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(got), len(want), rie.Output())
	}
	for i, w := range want {
		l := got[i]
		p, _ := l["principal"].(string)
		n, _ := l["name"].(string)
		if p != w.principal || n != w.name || l["outcome"] != w.outcome || l["protocol_version"] != w.protocol {
			t.Errorf("audit line %d: %v, want %+v", i, l, w)
		}
	}
	if strings.Contains(rie.Output(), "drop table t") {
		t.Error("arguments in clear in the function's output")
	}
}
