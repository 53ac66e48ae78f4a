package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// The audit trail across two instances, both protocol generations, with
// jwt auth, an access rule, a plugin and a rate limit: one line per
// routed request and per refusal, with the right outcome and reason;
// arguments hashed, never in clear; every line either instance writes,
// on either stream, JSON.

const auditPolicy = `    access:
      - when: "claims.sub.startsWith('alice')"
        allow: ["gateway-one-*"]
    plugins:
      - type: deny_pattern
        in: arguments
        patterns: ["(?i)drop\\s+table"]
    rate_limits:
      - per: principal
        tools: ["gateway-one-increment"]
        limit: 1
        window: 1h
`

// auditLines are the audit lines (those with an outcome) of instances.
func auditLines(t *testing.T, gws ...*testsupport.GatewayProcess) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, g := range gws {
		for _, l := range logLines(t, g.Output()) {
			if _, ok := l["outcome"]; ok {
				out = append(out, l)
			}
		}
	}
	return out
}

func TestAudit_OneLinePerRoutedRequestAndRefusalOnTwoInstances(t *testing.T) {
	c := newCluster(t)
	c.writeConfig("audit:\n  output: stdout\n  trusted_proxies: [127.0.0.1]\n" + c.policyConfig(auditPolicy))
	start := func() *testsupport.GatewayProcess {
		return testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL(), "--log-format", "json"},
			[]string{jwtSecretEnv + "=" + string(jwtSecret)})
	}
	gws := []*testsupport.GatewayProcess{start(), start()}
	secret := "top-secret-argument"
	type want struct {
		principal, name, outcome, backend, reason string
		code                                      float64 // 0: none
	}
	var wants []want
	n := 0
	ep := func() testsupport.Endpoint { n++; return gws[n%2] }
	run := time.Now().UnixNano() // rate limits live in Redis across runs: principals of this run's own
	for _, g := range []string{"2025", "2026"} {
		sub := fmt.Sprintf("alice-%s-%d", g, run)
		gen := generations(t, c, sub)[map[string]int{"2025": 0, "2026": 1}[g]]
		call := func(tool string, args map[string]any) *testsupport.Reply { return gen.call(ep(), tool, args) }
		call("gateway-one-echo", map[string]any{"text": secret})
		call("gateway-one-echo", map[string]any{"text": 5})                     // the backend's schema refuses: isError
		call("gateway-two-echo", map[string]any{"text": "x"})                   // hidden by the access rule
		call("gateway-one-echo", map[string]any{"text": "x; DROP TABLE users"}) // the plugin
		call("gateway-one-increment", nil)
		call("gateway-one-increment", nil) // over the rate limit
		call("gateway-one-nope", nil)      // unknown
		wants = append(wants,
			want{sub, "gateway-one-echo", audit.OutcomeOK, "gateway-one", "", 0},
			want{sub, "gateway-one-echo", audit.OutcomeToolError, "gateway-one", "", 0},
			want{sub, "gateway-two-echo", audit.OutcomeDenied, "", "access: access[0] does not allow gateway-two-echo", -32602},
			want{sub, "gateway-one-echo", audit.OutcomeDenied, "", "denied by plugin deny_pattern", -32030},
			want{sub, "gateway-one-increment", audit.OutcomeOK, "gateway-one", "", 0},
			want{sub, "gateway-one-increment", audit.OutcomeRateLimited, "", "rate_limits[0]", -32029},
			want{sub, "gateway-one-nope", audit.OutcomeError, "gateway-one", "", -32602}, // gateway-one answers it does not have it
		)
	}
	// 401s: no token, a bad one. And a request through a trusted proxy.
	for i, token := range []string{"", "not-a-jwt"} {
		cl := &testsupport.Client{T: t, Token: token}
		if r := cl.ModernRequest(gws[i], "tools/call", map[string]any{"name": "gateway-one-echo"}, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("token %q: %d", token, r.Status)
		}
	}
	wants = append(wants, want{"", "", audit.OutcomeUnauthenticated, "", "no_token", -32010},
		want{"", "", audit.OutcomeUnauthenticated, "", "malformed", -32010})
	proxied := &testsupport.Client{T: t, Token: c.token("alice-proxied")}
	body, _ := json.Marshal(testsupport.ModernMessage(1, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "p"}}, nil))
	h := testsupport.ModernHeaders("tools/call", map[string]any{"name": "gateway-one-echo"})
	h["X-Forwarded-For"] = "198.51.100.7, 127.0.0.1"
	testsupport.ReadReply(t, proxied.Open(gws[0], http.MethodPost, string(body), h))
	wants = append(wants, want{"alice-proxied", "gateway-one-echo", audit.OutcomeOK, "gateway-one", "", 0})

	var lines []map[string]any
	if !testsupport.Eventually(t, 10*time.Second, func() bool { lines = auditLines(t, gws...); return len(lines) >= len(wants) }) {
		t.Fatalf("%d audit lines, want %d:\n%v", len(lines), len(wants), lines)
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d audit lines, want one per event (%d):\n%v", len(lines), len(wants), lines)
	}
	used := make([]bool, len(lines))
	for _, w := range wants {
		found := false
		for i, l := range lines {
			if used[i] || l["outcome"] != w.outcome || str(l["principal"]) != w.principal || str(l["name"]) != w.name {
				continue
			}
			if str(l["backend"]) != w.backend || !strings.Contains(str(l["reason"]), w.reason) || (w.code != 0) != (l["code"] != nil) ||
				(w.code != 0 && l["code"] != w.code) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			t.Errorf("no audit line for %+v in:\n%s", w, dump(lines))
		}
	}
	wantDigest := audit.ArgumentsSHA256(json.RawMessage(`{"text":"` + secret + `"}`))
	digests := 0
	for _, l := range lines {
		for _, k := range []string{"time", "vhost", "outcome", "duration_ms"} {
			if _, ok := l[k]; !ok {
				t.Errorf("an audit line without %q: %v", k, l)
			}
		}
		if l["arguments_sha256"] == wantDigest {
			digests++
		}
		if l["arguments"] != nil {
			t.Errorf("arguments in clear with audit.arguments defaulting to hash: %v", l)
		}
		if l["outcome"] != audit.OutcomeUnauthenticated && str(l["remote_addr"]) != "127.0.0.1" && str(l["remote_addr"]) != "198.51.100.7" {
			t.Errorf("remote_addr %v", l["remote_addr"])
		}
		if str(l["principal"]) == "alice-proxied" && l["remote_addr"] != "198.51.100.7" {
			t.Errorf("behind a trusted proxy the remote address is %v, want the first untrusted hop", l["remote_addr"])
		}
		if strings.HasPrefix(str(l["principal"]), "alice-2025") && l["outcome"] != audit.OutcomeUnauthenticated {
			if l["session_hash"] == nil || l["protocol_version"] != "2025-11-25" {
				t.Errorf("a 2025 session's line without its session hash or version: %v", l)
			}
			if cl, _ := l["client"].(map[string]any); cl["name"] != "testsupport" {
				t.Errorf("a 2025 session's line without its clientInfo: %v", l)
			}
		}
		if strings.HasPrefix(str(l["principal"]), "alice-2026") && (l["protocol_version"] != "2026-07-28" || l["session_hash"] != nil) {
			t.Errorf("a 2026-07-28 line: %v", l)
		}
	}
	if digests != 2 {
		t.Errorf("%d lines carry the digest of the secret arguments, want 2 (one per generation)", digests)
	}
	for i, g := range gws {
		if out := g.Output(); strings.Contains(out, secret) {
			t.Errorf("instance %d wrote the arguments in clear", i)
		}
	}
	if mf := testsupport.ScrapeMetrics(t, gws[0].URL)["mcpgw_audit_dropped_total"]; mf == nil || len(mf.GetMetric()) != len(audit.DropReasons) {
		t.Errorf("/metrics: mcpgw_audit_dropped_total %v, want a series per reason", mf)
	} else {
		for _, m := range mf.GetMetric() {
			if m.GetCounter().GetValue() != 0 {
				t.Errorf("/metrics: mcpgw_audit_dropped_total %v, want 0", m)
			}
		}
	}
}

func str(v any) string { s, _ := v.(string); return s }

func dump(lines []map[string]any) string {
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		fmt.Fprintf(&b, "%s\n", j)
	}
	return b.String()
}

// An audit file is appended to, created 0600, and reopened on SIGHUP: a
// log rotation that moved it loses no line, and later lines go to the new
// file.
func TestAudit_FileReopenedOnSIGHUP(t *testing.T) {
	c := newCluster(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig("audit:\n  output: " + path + "\n  arguments: full\n" + cfg)
	g := c.start()
	call := func(text string) {
		if got := modernCall(t, g, c.token("carol"), "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": text}}).Text(); got != text {
			t.Fatalf("echo %q answered %q", text, got)
		}
	}
	lines := func(p string) []string {
		data, _ := os.ReadFile(p)
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	call("before")
	if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Contains(strings.Join(lines(path), ""), "before") }) {
		t.Fatal("no audit line in the file")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file %v %v, want mode 0600", fi, err)
	}
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	g.Signal(syscall.SIGHUP)
	if !testsupport.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatal("SIGHUP did not reopen the audit file")
	}
	call("after")
	if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Contains(strings.Join(lines(path), ""), "after") }) {
		t.Fatalf("the line after the rotation is not in the new file: %q", lines(path))
	}
	if got := lines(rotated); len(got) != 1 || !strings.Contains(got[0], `"arguments":{"text":"before"}`) {
		t.Fatalf("the rotated file holds %q, want the one line before (arguments: full)", got)
	}
}
