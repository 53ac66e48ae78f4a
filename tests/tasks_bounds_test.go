package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/taskstools"
)

// What a caller can make gateway-run tasks hold, across two instances,
// and what the audit trail says of them: a first question nobody answers
// ends its task and frees its place when the client's wait ends; finished
// tasks hold at most their budget, per caller; each task's end is an audit
// line naming the task the call that created it named; every refusal has
// a reason.

// boundedTasks starts two instances over taskstools backends (fx: a 2025
// session backend, fy: a stateless 2026-07-28 one), with two running
// tasks per caller, a 64 KiB budget of finished tasks, a client wait of
// 2 s and the audit trail on stdout.
func boundedTasks(t *testing.T) *gatewayTasks {
	t.Helper()
	g, urls := startTasksBackends(t)
	tasksBlock := strings.ReplaceAll(taskstools.GatewayTasksConfig, "\n", "\n        ")
	g.writeConfig(fmt.Sprintf(`%s  jobs:
    backends:
      fx:
        url: %s
        %s
      fy:
        url: %s
        %s
limits:
  tasks_per_principal: 2
  finished_task_bytes_per_principal: 64KiB
streams:
  call_lease: 2s
  client_request_timeout: 2s
audit:
  output: stdout
`, configHead(), urls["fx"], tasksBlock, urls["fy"], tasksBlock))
	for range 2 {
		g.gws = append(g.gws, testsupport.StartGateway(t, g.bin, []string{"--config", g.config, "--redis-url", redisSrv.URL(), "--log-format", "json"},
			[]string{jwtSecretEnv + "=" + string(jwtSecret)}))
	}
	return g
}

// auditOf is every audit line of principal sub on g's instances.
func (g *gatewayTasks) auditOf(sub string) []map[string]any {
	var out []map[string]any
	for _, l := range auditLines(g.t, g.gws...) {
		if l["principal"] == sub {
			out = append(out, l)
		}
	}
	return out
}

// awaitAudit waits until some audit line of sub satisfies cond.
func (g *gatewayTasks) awaitAudit(sub string, what string, cond func(map[string]any) bool) map[string]any {
	g.t.Helper()
	var found map[string]any
	if !testsupport.Eventually(g.t, 15*time.Second, func() bool {
		for _, l := range g.auditOf(sub) {
			if cond(l) {
				found = l
				return true
			}
		}
		return false
	}) {
		g.t.Fatalf("no audit line of %s: %s\n%s", sub, what, dump(g.auditOf(sub)))
	}
	return found
}

// A 2026-07-28 caller that never answers an input_before_task tool's
// first question (so never learns its task's id, to cancel it with) gets
// its place back when the client's wait ends: its tasks end, audited with
// why, and a new task starts.
func TestGatewayTasks_UnansweredFirstQuestionsFreeTheirPlaces(t *testing.T) {
	testsupport.SkipShort(t)
	g := boundedTasks(t)
	a, b := g.gws[0], g.gws[1]
	kim := g.client("kim")
	ask := func(ep testsupport.Endpoint) *testsupport.Reply {
		return kim.ModernRequest(ep, "tools/call", map[string]any{"name": "fy-test_tool_with_task"}, tasksCaps)
	}
	for _, ep := range []testsupport.Endpoint{a, b} {
		if r := ask(ep).Result(); r["resultType"] != "input_required" || r["requestState"] == nil {
			t.Fatalf("an input_before_task call: %v, want its first question", r)
		}
	}
	refused := ask(a)
	if refused.Status != http.StatusTooManyRequests || refused.Error() == nil || !strings.Contains(refused.Error().Message, "limits.tasks_per_principal") {
		t.Fatalf("a third task over tasks_per_principal 2: %d %s", refused.Status, refused.Body)
	}
	// Nobody answers: within the client's wait (2 s) the places are free.
	var again *testsupport.Reply
	if !testsupport.Eventually(t, 20*time.Second, func() bool {
		again = ask(b)
		return again.Status == http.StatusOK
	}) {
		t.Fatalf("the caller is still locked out well after streams.client_request_timeout: %d %s", again.Status, again.Body)
	}
	if r := again.Result(); r["resultType"] != "input_required" {
		t.Fatalf("the caller's next task: %v", r)
	}
	g.awaitAudit("kim", "the refusal, with its reason", func(l map[string]any) bool {
		return l["outcome"] == "rate_limited" && l["reason"] == "limits.tasks_per_principal"
	})
	ends := 0
	g.awaitAudit("kim", "both unanswered tasks' ends", func(map[string]any) bool {
		ends = 0
		for _, l := range g.auditOf("kim") {
			if l["event"] == "task_end" && l["outcome"] == "error" && strings.Contains(str(l["reason"]), "streams.client_request_timeout") {
				ends++
			}
		}
		return ends == 2
	})
	// Each end names the task its creating call named.
	created := map[string]bool{}
	for _, l := range g.auditOf("kim") {
		if l["event"] == nil && l["method"] == "tools/call" && l["task_hash"] != nil {
			created[str(l["task_hash"])] = true
		}
	}
	for _, l := range g.auditOf("kim") {
		if l["event"] == "task_end" && !created[str(l["task_hash"])] {
			t.Fatalf("a task end whose task no call created: %v\n%s", l, dump(g.auditOf("kim")))
		}
	}
}

// A caller's finished tasks hold at most their budget: a result past it
// fails its task, naming the field to raise; once the budget is held no
// task of that caller starts (429, the field named), while another
// caller's do. Every end is audited with its outcome.
func TestGatewayTasks_FinishedTasksHoldAtMostTheirBudget(t *testing.T) {
	testsupport.SkipShort(t)
	g := boundedTasks(t)
	a, b := g.gws[0], g.gws[1]
	lee := g.client("lee")
	label := strings.Repeat("r", 60<<10) // a 60 KiB result: one fits in 64 KiB
	start := func(c *testsupport.Client, ep testsupport.Endpoint) *testsupport.Reply {
		return c.ModernRequest(ep, "tools/call", map[string]any{"name": "fy-slow_compute",
			"arguments": map[string]any{"seconds": 0, "label": label}}, tasksCaps)
	}
	var statuses []string
	var refused *testsupport.Reply
	for i := 0; refused == nil; i++ {
		if i == 10 {
			t.Fatalf("ten 60 KiB results never filled a 64 KiB budget: %v", statuses)
		}
		ep := []testsupport.Endpoint{a, b}[i%2]
		r := start(lee, ep)
		if r.Status == http.StatusTooManyRequests {
			refused = r
			break
		}
		token, _ := r.Result()["taskId"].(string)
		if token == "" {
			t.Fatalf("task %d: %d %s", i, r.Status, r.Body)
		}
		done := awaitTask(t, lee, ep, token, func(m map[string]any) bool { return m["status"] == "completed" || m["status"] == "failed" })
		statuses = append(statuses, str(done["status"]))
		if done["status"] == "failed" && !strings.Contains(fmt.Sprint(done["error"]), "limits.finished_task_bytes_per_principal") {
			t.Fatalf("a result past the budget failed for another reason: %v", done["error"])
		}
	}
	if len(statuses) < 2 || statuses[0] != "completed" || statuses[1] != "failed" {
		t.Fatalf("statuses before the refusal %v: want the first result kept, the next failed for want of room", statuses)
	}
	if e := refused.Error(); e == nil || !strings.Contains(e.Message, "limits.finished_task_bytes_per_principal") || refused.Header.Get("Retry-After") == "" {
		t.Fatalf("a task at the budget: %s", refused.Body)
	}
	if r := start(g.client("max"), a); r.Result()["taskId"] == nil {
		t.Fatalf("another caller's task: %d %s", r.Status, r.Body)
	}
	g.awaitAudit("lee", "the refusal, with its reason", func(l map[string]any) bool {
		return l["outcome"] == "rate_limited" && l["reason"] == "limits.finished_task_bytes_per_principal"
	})
	g.awaitAudit("lee", "the completed task's end", func(l map[string]any) bool {
		return l["event"] == "task_end" && l["outcome"] == "ok" && l["name"] == "fy-slow_compute" && l["backend"] == "fy" && l["task_hash"] != nil
	})
	g.awaitAudit("lee", "the end of the task with no room for its result", func(l map[string]any) bool {
		return l["event"] == "task_end" && l["outcome"] == "error" && l["code"] == float64(-32603) &&
			strings.Contains(str(l["reason"]), "limits.finished_task_bytes_per_principal")
	})
}
