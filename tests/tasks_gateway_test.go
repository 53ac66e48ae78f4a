package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/taskstools"
)

// Tasks the gateway runs itself (a backend's tasks: block) for go-sdk
// backends that know nothing of tasks, across instances: two gateway
// processes on one Redis, a stateful backend (fx: a 2025 session backend,
// whose questions are elicitation requests) and a stateless one (fy: it
// answers a 2026-07-28 call input_required). A task created through one
// instance is polled, answered and cancelled through the other; the
// backend call is stopped by a cancel; an instance killed mid-task leaves
// a task that fails naming why; another caller is refused; the per-caller
// bound answers 429.

type gatewayTasks struct {
	*cluster
	gws   []*testsupport.GatewayProcess
	tools map[string]*taskstools.Tools // by backend key
}

func newGatewayTasks(t *testing.T) *gatewayTasks { return newGatewayTasksWith(t, "") }

// newGatewayTasksWith is newGatewayTasks with a policy block (plugins:,
// indented for the vhost) on the jobs vhost.
func newGatewayTasksWith(t *testing.T, block string) *gatewayTasks {
	t.Helper()
	g, urls := startTasksBackends(t)
	policy := block
	tasksBlock := strings.ReplaceAll(taskstools.GatewayTasksConfig, "\n", "\n        ")
	g.writeConfig(fmt.Sprintf(`%s  jobs:
%s    backends:
      fx:
        url: %s
        %s
      fy:
        url: %s
        %s
limits:
  tasks_per_principal: 2
streams:
  call_lease: 2s
`, configHead(), policy, urls["fx"], tasksBlock, urls["fy"], tasksBlock))
	for range 2 {
		g.gws = append(g.gws, g.start())
	}
	return g
}

// startTasksBackends starts the taskstools backends fx (a 2025 session
// backend) and fy (a stateless 2026-07-28 one) for a gatewayTasks whose
// config the caller writes: it returns their URLs by key.
func startTasksBackends(t *testing.T) (*gatewayTasks, map[string]string) {
	t.Helper()
	g := &gatewayTasks{cluster: newCluster(t), tools: map[string]*taskstools.Tools{}}
	urls := map[string]string{}
	for key, stateless := range map[string]bool{"fx": false, "fy": true} {
		url, tools, stop, err := taskstools.Start(t.Context(), "127.0.0.1:0", stateless, taskstools.Options{FailDelay: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		urls[key], g.tools[key] = url, tools
	}
	return g, urls
}

func (g *gatewayTasks) client(sub string) *testsupport.Client {
	return &testsupport.Client{T: g.t, Token: g.token(sub), VHost: "jobs"}
}

// awaitTask polls tasks/get through ep until cond holds.
func awaitTask(t *testing.T, c *testsupport.Client, ep testsupport.Endpoint, token string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	if !testsupport.Eventually(t, 15*time.Second, func() bool {
		got = c.ModernRequest(ep, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
		return cond(got)
	}) {
		t.Fatalf("task %s: the condition never held; last %v", token, got)
	}
	return got
}

func hasStatus(s string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["status"] == s }
}

func TestGatewayTasks_AcrossInstances(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasks(t)
	a, b := g.gws[0], g.gws[1]
	alice := g.client("alice")

	disc := alice.ModernRequest(a, "server/discover", nil, nil).Result()
	if ext, _ := disc["capabilities"].(map[string]any)["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("server/discover does not advertise the Tasks extension: %v", disc["capabilities"])
	}
	support := map[string]any{}
	for _, tool := range alice.ModernRequest(b, "tools/list", nil, nil).Result()["tools"].([]any) {
		m := tool.(map[string]any)
		ex, _ := m["execution"].(map[string]any)
		support[m["name"].(string)] = ex["taskSupport"]
	}
	if support["fx-slow_compute"] != "optional" || support["fy-failing_job"] != "required" || support["fx-greet"] != nil {
		t.Fatalf("execution.taskSupport in tools/list: %v", support)
	}

	for _, key := range []string{"fx", "fy"} {
		t.Run(key, func(t *testing.T) {
			// Created through A; its question seen and answered through B.
			created := alice.ModernRequest(a, "tools/call", map[string]any{"name": key + "-confirm_delete",
				"arguments": map[string]any{"filename": "x.txt"}}, tasksCaps).Result()
			token, _ := created["taskId"].(string)
			if created["resultType"] != "task" || !strings.HasPrefix(token, "mt1.") || created["status"] != "working" ||
				created["pollIntervalMs"] == nil || created["ttlMs"] == nil {
				t.Fatalf("created: %v", created)
			}
			asking := awaitTask(t, alice, b, token, hasStatus("input_required"))
			reqs, _ := asking["inputRequests"].(map[string]any)
			if len(reqs) != 1 {
				t.Fatalf("input requests: %v", asking)
			}
			var qkey string
			for k, req := range reqs {
				qkey = k
				if m, _ := req.(map[string]any); m["method"] != "elicitation/create" {
					t.Fatalf("input request %v", req)
				}
			}
			if e := g.client("bob").ModernRequest(b, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Error(); e == nil || e.Code != -32602 {
				t.Fatalf("bob's tasks/get of alice's task: %+v", e)
			}
			if e := g.client("bob").ModernRequest(a, "tasks/cancel", map[string]any{"taskId": token}, tasksCaps).Error(); e == nil || e.Code != -32602 {
				t.Fatalf("bob's tasks/cancel of alice's task: %+v", e)
			}
			ack := alice.ModernRequest(b, "tasks/update", map[string]any{"taskId": token, "inputResponses": map[string]any{
				qkey: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps).Result()
			if ack["resultType"] != "complete" || ack["status"] != nil {
				t.Fatalf("update ack: %v", ack)
			}
			done := awaitTask(t, alice, a, token, hasStatus("completed"))
			if !strings.Contains(fmt.Sprint(done["result"]), "Deleted x.txt") {
				t.Fatalf("completed with %v", done["result"])
			}

			// Cancelled through A while it runs on B: the backend call stops.
			slow := alice.ModernRequest(b, "tools/call", map[string]any{"name": key + "-slow_compute",
				"arguments": map[string]any{"seconds": 60, "label": "cancel-me"}}, tasksCaps).Result()
			slowID, _ := slow["taskId"].(string)
			if slowID == "" {
				t.Fatalf("slow_compute: %v", slow)
			}
			waitLabel(t, g.tools[key].Started, "cancel-me", "the backend call never started")
			alice.ModernRequest(a, "tasks/cancel", map[string]any{"taskId": slowID}, tasksCaps)
			waitLabel(t, g.tools[key].Cancelled, "cancel-me", "the backend call was never stopped")
			awaitTask(t, alice, b, slowID, hasStatus("cancelled"))

			// A tool error completes the task; a protocol error fails it.
			failing := alice.ModernRequest(a, "tools/call", map[string]any{"name": key + "-failing_job"}, tasksCaps).Result()
			if got := awaitTask(t, alice, b, failing["taskId"].(string), hasStatus("completed")); got["result"].(map[string]any)["isError"] != true {
				t.Fatalf("failing_job: %v", got)
			}
			broken := alice.ModernRequest(a, "tools/call", map[string]any{"name": key + "-protocol_error_job"}, tasksCaps).Result()
			got := awaitTask(t, alice, b, broken["taskId"].(string), hasStatus("failed"))
			if e, _ := got["error"].(map[string]any); e["code"] != float64(-32603) || got["result"] != nil {
				t.Fatalf("protocol_error_job: %v", got)
			}

			// Without the extension: optional tools answer synchronously,
			// required ones are refused.
			if r := alice.ModernRequest(b, "tools/call", map[string]any{"name": key + "-slow_compute", "arguments": map[string]any{"seconds": 0}}, nil).Result(); r["resultType"] != "complete" || r["taskId"] != nil {
				t.Fatalf("without the extension: %v", r)
			}
			if r := alice.ModernRequest(a, "tools/call", map[string]any{"name": key + "-failing_job"}, nil); r.Error() == nil || r.Error().Code != -32021 || r.Status != http.StatusBadRequest {
				t.Fatalf("a required task tool without the extension: %d %+v", r.Status, r.Error())
			}
		})
	}
}

// The per-caller bound holds across instances, and an instance killed
// mid-task leaves a task the other instance settles failed, naming why,
// once its lease lapses; the bound is then free again.
func TestGatewayTasks_BoundAndKilledInstance(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasks(t)
	a, b := g.gws[0], g.gws[1]
	carol := g.client("carol")
	start := func(ep testsupport.Endpoint, label string) *testsupport.Reply {
		return carol.ModernRequest(ep, "tools/call", map[string]any{"name": "fy-slow_compute",
			"arguments": map[string]any{"seconds": 120, "label": label}}, tasksCaps)
	}
	first := start(a, "one").Result()["taskId"].(string)
	second := start(b, "two").Result()["taskId"].(string)
	third := start(b, "three")
	if third.Status != http.StatusTooManyRequests || third.Error() == nil || third.Error().Code != -32029 || third.Header.Get("Retry-After") == "" {
		t.Fatalf("a third task over tasks_per_principal 2: %d %s", third.Status, third.Body)
	}
	if !strings.Contains(third.Error().Message, "tasks_per_principal") {
		t.Fatalf("the refusal does not name the bound: %s", third.Error().Message)
	}

	a.Kill()
	got := awaitTask(t, carol, b, first, hasStatus("failed"))
	if e, _ := got["error"].(map[string]any); e["message"] != taskrun.LapsedMessage {
		t.Fatalf("the dead instance's task: %v", got)
	}
	if s := awaitTask(t, carol, b, second, func(map[string]any) bool { return true })["status"]; s != "working" {
		t.Fatalf("the live instance's task is %v", s)
	}
	if r := start(b, "four"); r.Result()["taskId"] == nil {
		t.Fatalf("after the dead task freed its place: %s", r.Body)
	}
}

// A 2025-11-25 session that declares the extension gets gateway-run
// tasks on its POSTs, through either instance.
func TestGatewayTasks_Session(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasks(t)
	a, b := g.gws[0], g.gws[1]
	dan := g.client("dan")
	init := dan.Initialize(a, tasksCaps)
	caps, _ := init.Result()["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("initialize does not advertise the Tasks extension: %v", caps)
	}

	for _, key := range []string{"fx", "fy"} {
		created := dan.Call(b, "tools/call", map[string]any{"name": key + "-multi_input"}).Result()
		token, _ := created["taskId"].(string)
		if created["resultType"] != "task" || token == "" {
			t.Fatalf("%s created: %v", key, created)
		}
		var got map[string]any
		if !testsupport.Eventually(t, 15*time.Second, func() bool {
			got = dan.Call(a, "tasks/get", map[string]any{"taskId": token}).Result()
			return got["status"] == "input_required"
		}) {
			t.Fatalf("%s: never asked: %v", key, got)
		}
		answers := map[string]any{}
		for k, req := range got["inputRequests"].(map[string]any) {
			if strings.Contains(fmt.Sprint(req), "What is your name?") {
				answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Dan"}}
			} else {
				answers[k] = map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}
			}
		}
		if len(answers) != 2 {
			t.Fatalf("%s: multi_input asks two questions in one round: %v", key, got["inputRequests"])
		}
		dan.Call(b, "tasks/update", map[string]any{"taskId": token, "inputResponses": answers})
		if !testsupport.Eventually(t, 15*time.Second, func() bool {
			got = dan.Call(a, "tasks/get", map[string]any{"taskId": token}).Result()
			return got["status"] == "completed"
		}) {
			t.Fatalf("%s: never completed: %v", key, got)
		}
		if s := fmt.Sprint(got["result"]); !strings.Contains(s, "name=Dan") || !strings.Contains(s, "confirm=true") {
			t.Fatalf("%s: completed with %v", key, got["result"])
		}
	}
}

func waitLabel(t *testing.T, ch <-chan string, want, msg string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case l := <-ch:
			if l == want {
				return
			}
		case <-deadline:
			t.Fatal(msg)
		}
	}
}

// A subscriptions/listen naming a gateway-run task, held on one instance,
// hears every status the task takes while it runs on the other
// (notifications/tasks, full DetailedTasks under the client's id); an id
// that is not the caller's is left out of the acknowledgement; taskIds
// without the extension are -32021.
func TestGatewayTasks_ListenHearsStatusChanges(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasks(t)
	a, b := g.gws[0], g.gws[1]
	erin := g.client("erin")
	created := erin.ModernRequest(a, "tools/call", map[string]any{"name": "fy-confirm_delete",
		"arguments": map[string]any{"filename": "y.txt"}}, tasksCaps).Result()
	token := created["taskId"].(string)
	foreign := g.client("frank").ModernRequest(a, "tools/call", map[string]any{"name": "fy-slow_compute",
		"arguments": map[string]any{"seconds": 30}}, tasksCaps).Result()["taskId"].(string)

	if r := erin.ModernRequest(b, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{token}}}, nil); r.Error() == nil || r.Error().Code != -32021 {
		t.Fatalf("taskIds without the extension: %d %s", r.Status, r.Body)
	}
	s := erin.ModernStream(b, "watch", "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"taskIds": []string{token, foreign}}}, tasksCaps)
	defer s.Close()
	ack := s.Next()
	if ack.Method() != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first event %v", ack.Msg)
	}
	ids := fmt.Sprint(ack.Msg["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"])
	if !strings.Contains(ids, token) || strings.Contains(ids, foreign) {
		t.Fatalf("acknowledged taskIds %s: want erin's task only", ids)
	}
	next := func(status string) map[string]any {
		t.Helper()
		for {
			ev, ok := s.NextWithin(15 * time.Second)
			if !ok {
				t.Fatalf("no notifications/tasks with status %s", status)
			}
			if ev.Method() != "notifications/tasks" {
				t.Fatalf("unexpected event on the listen: %v", ev.Msg)
			}
			p := ev.Msg["params"].(map[string]any)
			meta, _ := p["_meta"].(map[string]any)
			if p["taskId"] != token || meta["io.modelcontextprotocol/subscriptionId"] != "watch" {
				t.Fatalf("notification %v", p)
			}
			if p["status"] == status {
				return p
			}
		}
	}
	asking := next("input_required")
	var qkey string
	for k := range asking["inputRequests"].(map[string]any) {
		qkey = k
	}
	erin.ModernRequest(a, "tasks/update", map[string]any{"taskId": token, "inputResponses": map[string]any{
		qkey: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps)
	if done := next("completed"); !strings.Contains(fmt.Sprint(done["result"]), "Deleted y.txt") {
		t.Fatalf("completed notification %v", done)
	}
}

// input_before_task for a 2025 session: the tool's first question is
// asked on the call's own stream, as a synchronous call's would be; the
// answer may go to the other instance; then the call answers with the
// task, which completes with what the answer said.
func TestGatewayTasks_SessionInputBeforeTask(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasks(t)
	a, b := g.gws[0], g.gws[1]
	gil := g.client("gil")
	gil.Initialize(a, json.RawMessage(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`))

	for i, key := range []string{"fx", "fy"} {
		s := gil.CallStreaming(a, int64(10+i), "tools/call", map[string]any{"name": key + "-test_tool_with_task"})
		req := s.Next()
		if req.Method() != "elicitation/create" {
			t.Fatalf("%s: first event %s, want the tool's question", key, req.Data)
		}
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"name":"Gil"}}}`, req.Msg["id"])
		if r := gil.Post(b, answer); r.Status != http.StatusAccepted {
			t.Fatalf("%s: the answer POSTed to the other instance: %d", key, r.Status)
		}
		final := s.Next()
		res, _ := final.Msg["result"].(map[string]any)
		token, _ := res["taskId"].(string)
		if res["resultType"] != "task" || token == "" {
			t.Fatalf("%s: the call answered %s, want the task", key, final.Data)
		}
		var got map[string]any
		if !testsupport.Eventually(t, 15*time.Second, func() bool {
			got = gil.Call(b, "tasks/get", map[string]any{"taskId": token}).Result()
			return got["status"] == "completed"
		}) {
			t.Fatalf("%s: never completed: %v", key, got)
		}
		if !strings.Contains(fmt.Sprint(got["result"]), "Hello, Gil!") {
			t.Fatalf("%s: completed with %v", key, got["result"])
		}
	}
}

// Plugins run on a task's call as on a synchronous one: a pre-hook's
// refusal is the call's error and no task exists; a post-hook's refusal
// of the result fails the task with that error.
func TestGatewayTasks_Plugins(t *testing.T) {
	testsupport.SkipShort(t)
	g := newGatewayTasksWith(t, `    plugins:
      - type: deny_pattern
        in: arguments
        patterns: ["forbidden"]
      - type: deny_pattern
        in: result
        patterns: ["Deleted"]
`)
	a, b := g.gws[0], g.gws[1]
	hal := g.client("hal")
	refused := hal.ModernRequest(a, "tools/call", map[string]any{"name": "fy-slow_compute",
		"arguments": map[string]any{"seconds": 1, "label": "forbidden"}}, tasksCaps)
	if refused.Error() == nil || strings.Contains(string(refused.Body), "taskId") {
		t.Fatalf("a pre-hook refusal: %d %s, want the call's error and no task", refused.Status, refused.Body)
	}
	created := hal.ModernRequest(a, "tools/call", map[string]any{"name": "fy-confirm_delete",
		"arguments": map[string]any{"filename": "q.txt"}}, tasksCaps).Result()
	token := created["taskId"].(string)
	asking := awaitTask(t, hal, b, token, hasStatus("input_required"))
	var qkey string
	for k := range asking["inputRequests"].(map[string]any) {
		qkey = k
	}
	hal.ModernRequest(b, "tasks/update", map[string]any{"taskId": token, "inputResponses": map[string]any{
		qkey: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps)
	got := awaitTask(t, hal, a, token, hasStatus("failed"))
	if e, _ := got["error"].(map[string]any); e == nil || got["result"] != nil || strings.Contains(fmt.Sprint(got), "Deleted q.txt") {
		t.Fatalf("a post-hook refusal of the result: %v", got)
	}
}
