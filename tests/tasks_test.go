package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/tasksbackend"
)

// Tasks (SEP-2663) passed through to a backend that implements them,
// across instances: two gateway processes on one Redis, in front of the
// SEP-2663 fixture backend (fx) and a go-sdk backend on a multi-backend
// vhost. A task created through one instance is polled, answered and
// cancelled through the other; the client only ever holds the gateway's
// sealed id; another caller, a tampered id and a request without the
// extension are refused.

const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

type tasksCluster struct {
	*cluster
	gws []*testsupport.GatewayProcess
}

func newTasksCluster(t *testing.T) *tasksCluster {
	t.Helper()
	url, _, stop, err := tasksbackend.Start(t.Context(), "127.0.0.1:0", tasksbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c := newCluster(t)
	c.writeConfig(fmt.Sprintf(`%s  tasks:
    backends:
      fx:
        url: %s
      gateway-two:
        url: %s
`, configHead(), url, c.backends["gateway-two"].URL))
	tc := &tasksCluster{cluster: c}
	for range 2 {
		tc.gws = append(tc.gws, c.start())
	}
	return tc
}

func (tc *tasksCluster) client(sub string) *testsupport.Client {
	return &testsupport.Client{T: tc.t, Token: tc.token(sub), VHost: "tasks"}
}

func TestTasks_PassedThroughAcrossInstances(t *testing.T) {
	testsupport.SkipShort(t)
	tc := newTasksCluster(t)
	a, b := tc.gws[0], tc.gws[1]
	alice := tc.client("alice")

	// Discovery advertises the extension (one backend has it).
	disc := alice.ModernRequest(a, "server/discover", nil, nil).Result()
	if ext, _ := disc["capabilities"].(map[string]any)["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("server/discover does not advertise the Tasks extension: %v", disc["capabilities"])
	}

	// A task is created through instance A, under a sealed id.
	created := alice.ModernRequest(a, "tools/call", map[string]any{"name": "fx-confirm_delete", "arguments": map[string]any{"filename": "x.txt"}}, tasksCaps).Result()
	token, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !strings.HasPrefix(token, "mt1.") || created["ttlMs"] == nil {
		t.Fatalf("created: %v", created)
	}

	// Polled through instance B: the same id, waiting for input.
	var got map[string]any
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		got = alice.ModernRequest(b, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
		return got["status"] == "input_required"
	}) {
		t.Fatalf("the task never asked for input: %v", got)
	}
	if got["taskId"] != token {
		t.Fatalf("tasks/get answered for %v, want the client's id", got["taskId"])
	}
	reqs, _ := got["inputRequests"].(map[string]any)
	var key string
	for k := range reqs {
		key = k
	}
	if len(reqs) != 1 || !strings.HasPrefix(key, "confirm") {
		t.Fatalf("input requests: %v", got["inputRequests"])
	}

	// Another caller, a tampered id, no extension: refused, the task untouched.
	if e := tc.client("bob").ModernRequest(b, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Error(); e == nil || e.Code != -32602 {
		t.Fatalf("bob's tasks/get of alice's task: %+v", e)
	}
	tampered := token[:len(token)-2] + "AA"
	if e := alice.ModernRequest(a, "tasks/get", map[string]any{"taskId": tampered}, tasksCaps).Error(); e == nil || e.Code != -32602 {
		t.Fatalf("a tampered id: %+v", e)
	}
	if r := alice.ModernRequest(a, "tasks/cancel", map[string]any{"taskId": token}, nil); r.Status != http.StatusBadRequest || r.Error() == nil || r.Error().Code != -32021 {
		t.Fatalf("tasks/cancel without the extension: %d %+v", r.Status, r.Error())
	}

	// Answered through instance A, completed as seen through B.
	ack := alice.ModernRequest(a, "tasks/update", map[string]any{"taskId": token,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps).Result()
	if ack["resultType"] != "complete" {
		t.Fatalf("update ack: %v", ack)
	}
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		got = alice.ModernRequest(b, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
		return got["status"] == "completed"
	}) {
		t.Fatalf("the task never completed: %v", got)
	}
	if res, _ := got["result"].(map[string]any); !strings.Contains(fmt.Sprint(res["content"]), "Deleted x.txt") {
		t.Fatalf("completed with %v", got["result"])
	}

	// Cancelled through B, cancelled as seen through A.
	slow := alice.ModernRequest(b, "tools/call", map[string]any{"name": "fx-slow_compute", "arguments": map[string]any{"seconds": 60}}, tasksCaps).Result()
	slowID, _ := slow["taskId"].(string)
	if slowID == "" {
		t.Fatalf("slow_compute: %v", slow)
	}
	if ack := alice.ModernRequest(b, "tasks/cancel", map[string]any{"taskId": slowID}, tasksCaps).Result(); ack["resultType"] != "complete" {
		t.Fatalf("cancel ack: %v", ack)
	}
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		got = alice.ModernRequest(a, "tasks/get", map[string]any{"taskId": slowID}, tasksCaps).Result()
		return got["status"] == "cancelled"
	}) {
		t.Fatalf("the task was never cancelled: %v", got)
	}

	// Without the extension the same tool answers synchronously.
	if r := alice.ModernRequest(a, "tools/call", map[string]any{"name": "fx-slow_compute", "arguments": map[string]any{"seconds": 0}}, nil).Result(); r["resultType"] != "complete" || r["taskId"] != nil {
		t.Fatalf("without the extension: %v", r)
	}
}

// A 2025-11-25 session that declares the extension in its initialize
// gets the same tasks: the extension advertised, a task under a sealed
// id, tasks/get and tasks/cancel on its POSTs through either instance. A
// session that did not declare it is refused tasks/* with -32021 and
// gets synchronous results.
func TestTasks_SessionThatDeclaredTheExtension(t *testing.T) {
	testsupport.SkipShort(t)
	tc := newTasksCluster(t)
	a, b := tc.gws[0], tc.gws[1]
	carol := tc.client("carol")
	init := carol.Initialize(a, tasksCaps)
	caps, _ := init.Result()["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("initialize does not advertise the Tasks extension to a client that declared it: %v", caps)
	}

	created := carol.Call(b, "tools/call", map[string]any{"name": "fx-slow_compute", "arguments": map[string]any{"seconds": 60}}).Result()
	token, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !strings.HasPrefix(token, "mt1.") || created["ttlMs"] == nil {
		t.Fatalf("created: %v", created)
	}
	if got := carol.Call(a, "tasks/get", map[string]any{"taskId": token}).Result(); got["taskId"] != token || got["status"] != "working" {
		t.Fatalf("tasks/get: %v", got)
	}
	carol.Call(b, "tasks/cancel", map[string]any{"taskId": token})
	var got map[string]any
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		got = carol.Call(a, "tasks/get", map[string]any{"taskId": token}).Result()
		return got["status"] == "cancelled"
	}) {
		t.Fatalf("the task was never cancelled: %v", got)
	}

	dave := tc.client("dave")
	dave.Initialize(a, nil)
	if e := dave.Request(b, "tasks/get", map[string]any{"taskId": token}).Error(); e == nil || e.Code != -32021 {
		t.Fatalf("tasks/get from a session without the extension: %+v", e)
	}
	if r := dave.Call(b, "tools/call", map[string]any{"name": "fx-slow_compute", "arguments": map[string]any{"seconds": 0}}).Result(); r["taskId"] != nil {
		t.Fatalf("a session without the extension got a task: %v", r)
	}
}

// A listen naming a backend's task is held at that backend under the
// backend's own id; its notifications/tasks reach the client under the
// client's id.
func TestTasks_ListenForABackendsTask(t *testing.T) {
	testsupport.SkipShort(t)
	tc := newTasksCluster(t)
	a, b := tc.gws[0], tc.gws[1]
	alice := tc.client("alice")
	created := alice.ModernRequest(a, "tools/call", map[string]any{"name": "fx-confirm_delete", "arguments": map[string]any{"filename": "z.txt"}}, tasksCaps).Result()
	token, _ := created["taskId"].(string)
	s := alice.ModernStream(b, "w", "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{token}}}, tasksCaps)
	defer s.Close()
	if ack := s.Next(); ack.Method() != "notifications/subscriptions/acknowledged" ||
		!strings.Contains(fmt.Sprint(ack.Msg["params"]), token) {
		t.Fatalf("acknowledgement %v", ack.Msg)
	}
	var key string
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		got := alice.ModernRequest(a, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
		reqs, _ := got["inputRequests"].(map[string]any)
		for k := range reqs {
			key = k
		}
		return got["status"] == "input_required"
	}) {
		t.Fatal("the task never asked")
	}
	alice.ModernRequest(a, "tasks/update", map[string]any{"taskId": token,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps)
	for {
		ev, ok := s.NextWithin(15 * time.Second)
		if !ok {
			t.Fatal("no notifications/tasks completed")
		}
		p, _ := ev.Msg["params"].(map[string]any)
		if ev.Method() != "notifications/tasks" || p["taskId"] != token {
			t.Fatalf("event %v", ev.Msg)
		}
		if p["status"] == "completed" {
			return
		}
	}
}
