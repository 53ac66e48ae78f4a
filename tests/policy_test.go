package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Plugins and rate limits, end to end: gateway processes on one Redis,
// real go-sdk backends, 2025-era sessions and 2026-07-28 requests.

// policyConfig is the cluster's config with a policy block (plugins:,
// rate_limits:, indented for the demo vhost) on the demo vhost.
func (c *cluster) policyConfig(block string) string {
	return fmt.Sprintf(`%s  demo:
%s    backends:
      gateway-one:
        url: %s
      gateway-two:
        url: %s
`, configHead(), block, c.backends["gateway-one"].URL, c.backends["gateway-two"].URL)
}

const pluginsBlock = `    plugins:
      - type: validate_arguments
      - type: deny_pattern
        in: arguments
        patterns: ["(?i)drop\\s+table"]
      - type: deny_pattern
        in: result
        patterns: ["forbidden-word"]
      - type: redact
        builtin: [secrets, email]
        patterns: ["case-[0-9]+"]
      - type: max_result_bytes
        limit: 2000
`

// gen sends one tools/call in one protocol generation.
type gen struct {
	name string
	call func(ep testsupport.Endpoint, tool string, args map[string]any) *testsupport.Reply
}

func generations(t *testing.T, c *cluster, sub string) []gen {
	legacy := c.client(sub)
	return []gen{
		{"2025", func(ep testsupport.Endpoint, tool string, args map[string]any) *testsupport.Reply {
			if legacy.SessionID == "" {
				legacy.Initialize(ep, nil)
			}
			return legacy.Request(ep, "tools/call", map[string]any{"name": tool, "arguments": args})
		}},
		{"2026-07-28", func(ep testsupport.Endpoint, tool string, args map[string]any) *testsupport.Reply {
			return modernCall(t, ep, c.token(sub), "tools/call", map[string]any{"name": tool, "arguments": args})
		}},
	}
}

// errorData is the data of a reply's JSON-RPC error.
func errorData(t *testing.T, r *testsupport.Reply) map[string]any {
	t.Helper()
	var d map[string]any
	if e := r.Error(); e == nil || json.Unmarshal(e.Data, &d) != nil {
		t.Fatalf("no error data: %s", r.Body)
	}
	return d
}

func TestPlugins_EachPluginOnRealBackendsBothGenerations(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	c.writeConfig(c.policyConfig(pluginsBlock))
	a, b := c.start(), c.start()
	one := c.backends["gateway-one"]

	for _, g := range generations(t, c, "alice") {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				tool string
				args map[string]any
				// code 0: a result whose text is want; else the error's
				// code and the rule its data names.
				code    int64
				rule    string
				want    string
				backend int // tools/call the backend saw
			}{
				{name: "allowed", tool: "gateway-one-echo", args: map[string]any{"text": "hello"}, want: "hello", backend: 1},
				{name: "validate_arguments refuses a bad argument before the backend", tool: "gateway-one-echo",
					args: map[string]any{"text": 5}, code: -32602, rule: "plugins[0]"},
				{name: "validate_arguments refuses a missing required argument", tool: "gateway-one-echo",
					args: map[string]any{}, code: -32602, rule: "plugins[0]"},
				{name: "deny_pattern on arguments: no backend call", tool: "gateway-one-echo",
					args: map[string]any{"text": "x; DROP  TABLE users"}, code: -32030, rule: "plugins[1].patterns[0]"},
				{name: "deny_pattern on the result: after the backend", tool: "gateway-two-echo",
					args: map[string]any{"text": "a forbidden-word"}, code: -32030, rule: "plugins[2].patterns[0]", backend: 1},
				{name: "redact", tool: "gateway-one-echo",
					args: map[string]any{"text": "mail bob@example.com key AKIAIOSFODNN7EXAMPLE re case-12"},
					want: "mail [REDACTED:email] key [REDACTED:aws_access_key] re [REDACTED:patterns[0]]", backend: 1},
				{name: "max_result_bytes", tool: "gateway-one-echo",
					args: map[string]any{"text": strings.Repeat("x", 3000)}, code: -32030, rule: "plugins[4].limit", backend: 1},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for _, be := range c.backends {
						be.ResetCounts()
					}
					for i, ep := range []testsupport.Endpoint{a, b} {
						r := g.call(ep, tc.tool, tc.args)
						if tc.code == 0 {
							if got := r.Text(); got != tc.want {
								t.Fatalf("instance %d: text %q, want %q", i, got, tc.want)
							}
							continue
						}
						e := r.Error()
						if e == nil || e.Code != tc.code || r.Status != http.StatusOK {
							t.Fatalf("instance %d: status %d %s, want HTTP 200 with %d", i, r.Status, r.Body, tc.code)
						}
						if d := errorData(t, r); !strings.HasPrefix(d["rule"].(string), tc.rule) || d["plugin"] == "" {
							t.Fatalf("instance %d: error data %v, want rule %s", i, d, tc.rule)
						}
						if !strings.Contains(e.Message, tc.rule) || strings.Contains(e.Message, "AKIA") || strings.Contains(e.Message, "DROP") {
							t.Fatalf("instance %d: message %q must name %s and quote no match", i, e.Message, tc.rule)
						}
					}
					seen := one.Count("tools/call") + c.backends["gateway-two"].Count("tools/call")
					if seen != 2*tc.backend {
						t.Fatalf("backends saw %d tools/call, want %d", seen, 2*tc.backend)
					}
				})
			}
		})
	}

	// Progress passes redact, in both generations.
	secret := "token ghp_" + strings.Repeat("a1B2", 9) + " for ann@example.com"
	args := map[string]any{"steps": 2, "message": secret}
	legacy := c.client("bob")
	legacy.Initialize(a, nil)
	s := legacy.CallStreaming(b, 7, "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": args, "_meta": map[string]any{"progressToken": "p1"}})
	modern := c.client("carol")
	m := modern.ModernStream(a, 8, "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": args, "_meta": map[string]any{"progressToken": "p2"}}, nil)
	for name, st := range map[string]*testsupport.SSEStream{"2025": s, "2026-07-28": m} {
		progress := 0
		for {
			ev := st.Next()
			if ev.Method() == "notifications/progress" {
				progress++
				p := ev.Msg["params"].(map[string]any)
				if p["message"] != "token [REDACTED:github_token] for [REDACTED:email]" {
					t.Fatalf("%s: progress message %q", name, p["message"])
				}
				continue
			}
			if ev.Msg["result"] == nil {
				t.Fatalf("%s: %s", name, ev.Data)
			}
			break
		}
		if progress != 2 {
			t.Fatalf("%s: %d progress notifications, want 2", name, progress)
		}
	}

	// Every decision is counted by plugin and decision, on the instance
	// that took it.
	var denied, redacted float64
	for _, g := range []*testsupport.GatewayProcess{a, b} {
		fams := testsupport.ScrapeMetrics(t, g.URL)
		denied += testsupport.MetricSum(fams, "mcpgw_plugin_decisions_total", map[string]string{"plugin": "validate_arguments", "decision": "deny"})
		redacted += testsupport.MetricSum(fams, "mcpgw_plugin_decisions_total", map[string]string{"plugin": "redact", "decision": "redact"})
	}
	// 2 generations x 2 instances x 2 bad-argument cases; redact: 4 results and 4 progress messages.
	if denied != 8 || redacted != 8 {
		t.Fatalf("metrics: validate_arguments deny %v (want 8), redact redact %v (want 8)", denied, redacted)
	}
}

// rateLimitsBlock limits gateway-one's tools to 3 calls per principal per
// hour; gateway-two's are not limited.
const rateLimitsBlock = `    rate_limits:
      - per: principal
        tools: ["gateway-one-*"]
        limit: 3
        window: 1h
`

func TestRateLimits_SharedAcrossInstancesPerPrincipalBothGenerations(t *testing.T) {
	c := newCluster(t)
	c.writeConfig(c.policyConfig(rateLimitsBlock))
	a, b := c.start(), c.start()
	one := c.backends["gateway-one"]
	echo := map[string]any{"text": "hi"}
	alice, bob := generations(t, c, "alice"), generations(t, c, "bob")

	limited := func(who string, r *testsupport.Reply) {
		t.Helper()
		e := r.Error()
		if r.Status != http.StatusTooManyRequests || e == nil || e.Code != -32029 || !strings.Contains(e.Message, "rate_limits[0]") {
			t.Fatalf("%s: %d %s, want 429 with -32029 naming rate_limits[0]", who, r.Status, r.Body)
		}
		// 3 per hour: the next call fits 20 minutes after the first.
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1100 || ra > 1200 {
			t.Fatalf("%s: Retry-After %q, want about 1200 seconds", who, r.Header.Get("Retry-After"))
		}
		if d := errorData(t, r); d["limit"] != "rate_limits[0]" || d["retryAfterMs"].(float64) <= 0 {
			t.Fatalf("%s: error data %v", who, d)
		}
	}

	// alice's 2025 session: three calls across both instances, then 429.
	for i, ep := range []testsupport.Endpoint{a, b, a} {
		if r := alice[0].call(ep, "gateway-one-echo", echo); r.Error() != nil || r.Text() != "hi" {
			t.Fatalf("alice call %d: %d %s", i, r.Status, r.Body)
		}
	}
	limited("alice's 4th call", alice[0].call(b, "gateway-one-echo", echo))
	// The counter is the principal's, whatever the generation.
	limited("alice's 2026-07-28 call", alice[1].call(a, "gateway-one-echo", echo))
	// Over the limit, an answer that would have been a stream (progress
	// asked, only event streams accepted) is a 429 still.
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
		"name": "gateway-one-echo", "arguments": echo, "_meta": map[string]any{"progressToken": "p"}}})
	cl := c.client("alice")
	cl.Initialize(a, nil)
	limited("alice's streamed call", testsupport.ReadReply(t, cl.Open(b, http.MethodPost, string(body), map[string]string{"Accept": "text/event-stream"})))
	if n := one.Count("tools/call"); n != 3 {
		t.Fatalf("the backend saw %d calls, want 3: a refused call reaches no backend", n)
	}
	// Tools the limit does not name are not limited.
	if r := alice[1].call(b, "gateway-two-echo", echo); r.Error() != nil {
		t.Fatalf("gateway-two-echo: %d %s", r.Status, r.Body)
	}

	// bob's limit is his own: untouched by alice's, in either generation.
	for i, ep := range []testsupport.Endpoint{b, a} {
		if r := bob[1].call(ep, "gateway-one-echo", echo); r.Error() != nil {
			t.Fatalf("bob's call %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := bob[0].call(a, "gateway-one-echo", echo); r.Error() != nil {
		t.Fatalf("bob's 3rd call: %d %s", r.Status, r.Body)
	}
	limited("bob's 4th call", bob[1].call(b, "gateway-one-echo", echo))

	var denied float64
	for _, g := range []*testsupport.GatewayProcess{a, b} {
		denied += testsupport.MetricSum(testsupport.ScrapeMetrics(t, g.URL), "mcpgw_plugin_decisions_total", map[string]string{"plugin": "rate_limit", "decision": "deny"})
	}
	if denied != 4 {
		t.Fatalf("rate_limit denials counted: %v, want 4", denied)
	}
}

// denyBlock is a policy block with one deny_pattern on arguments.
func denyBlock(pattern string) string {
	return "    plugins:\n      - type: deny_pattern\n        in: arguments\n        patterns: [\"" + pattern + "\"]\n"
}

func TestPolicy_ReloadAppliesNewPolicyAndABadOneKeepsTheRunning(t *testing.T) {
	c := newCluster(t)
	c.writeConfig(c.policyConfig(denyBlock("alpha")))
	a := c.start()
	gens := generations(t, c, "alice")

	// refused asserts, in both generations, whether a plugin refuses
	// echoing text.
	refused := func(when, text string, want bool) {
		t.Helper()
		for _, g := range gens {
			r := g.call(a, "gateway-one-echo", map[string]any{"text": text})
			e := r.Error()
			if e != nil && e.Code != -32030 {
				t.Fatalf("%s, %s %q: %s", when, g.name, text, r.Body)
			}
			if got := e != nil; got != want {
				t.Fatalf("%s, %s %q: refused %v, want %v (%s)", when, g.name, text, got, want, r.Body)
			}
		}
	}
	reload := func(block, logged string, n int) {
		t.Helper()
		c.writeConfig(c.policyConfig(block))
		a.Signal(sighup)
		if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Count(a.Output(), logged) >= n }) {
			t.Fatalf("no %q (%d) in the log:\n%s", logged, n, a.Output())
		}
	}

	refused("at start", "alpha", true)
	refused("at start", "beta", false)

	limitTwo := "    rate_limits:\n      - per: principal\n        tools: [\"gateway-two-*\"]\n        limit: 1\n        window: 1h\n"
	reload(denyBlock("beta")+limitTwo, "config reloaded", 1)
	refused("after the reload", "alpha", false)
	refused("after the reload", "beta", true)
	two := func() *testsupport.Reply {
		return gens[1].call(a, "gateway-two-echo", map[string]any{"text": "x"})
	}
	if r := gens[0].call(a, "gateway-two-echo", map[string]any{"text": "x"}); r.Error() != nil {
		t.Fatalf("the new limit's first call: %s", r.Body)
	}
	if r := two(); r.Status != http.StatusTooManyRequests {
		t.Fatalf("the new limit's second call: %d %s", r.Status, r.Body)
	}

	// A policy that does not compile is refused whole, with the rule
	// named; the running one stays.
	reload(denyBlock("(unclosed")+limitTwo, "config reload failed", 1)
	if out := a.Output(); !strings.Contains(out, "virtual_hosts.demo.plugins[0].patterns[0]") {
		t.Fatalf("the reload failure does not name the pattern:\n%s", out)
	}
	refused("after a bad reload", "beta", true)
	refused("after a bad reload", "alpha", false)
	if r := two(); r.Status != http.StatusTooManyRequests {
		t.Fatalf("after a bad reload the limit is gone: %d %s", r.Status, r.Body)
	}
	reload("    rate_limits:\n      - per: nobody\n        limit: 1\n        window: 1h\n", "config reload failed", 2)
	if out := a.Output(); !strings.Contains(out, "virtual_hosts.demo.rate_limits[0].per") {
		t.Fatalf("the reload failure does not name the limit:\n%s", out)
	}
	refused("after a second bad reload", "beta", true)

	// Without policy, nothing is refused or limited.
	reload("", "config reloaded", 2)
	refused("with no policy", "beta", false)
	if r := two(); r.Error() != nil {
		t.Fatalf("with no limits: %d %s", r.Status, r.Body)
	}
}
