package tasksbackend_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/tasksbackend"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client speaks 2026-07-28 to the fixture, declaring the extension or not.
type client struct {
	t     *testing.T
	url   string
	tasks bool
}

type rpcResp struct {
	status int
	Result map[string]any `json:"result"`
	Error  *struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	} `json:"error"`
}

func start(t *testing.T, opts tasksbackend.Options) (string, *tasksbackend.Server) {
	t.Helper()
	url, srv, stop, err := tasksbackend.Start(context.Background(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, srv
}

// call sends method with params; headers override the ones it derives.
func (c client) call(method string, params map[string]any, headers map[string]string) rpcResp {
	c.t.Helper()
	caps := map[string]any{"elicitation": map[string]any{}}
	if c.tasks {
		caps["extensions"] = map[string]any{tasksbackend.ExtensionID: map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    tasksbackend.ProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", tasksbackend.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out rpcResp
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.t.Fatalf("%s: decoding: %v", method, err)
	}
	out.status = resp.StatusCode
	return out
}

func (c client) ok(method string, params map[string]any) map[string]any {
	c.t.Helper()
	r := c.call(method, params, nil)
	if r.Error != nil {
		c.t.Fatalf("%s: error %d %v", method, r.Error.Code, r.Error.Data)
	}
	return r.Result
}

func (c client) create(tool string, args map[string]any) string {
	c.t.Helper()
	res := c.ok("tools/call", map[string]any{"name": tool, "arguments": args})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		c.t.Fatalf("%s: want a CreateTaskResult, got %v", tool, res)
	}
	return id
}

// await polls tasks/get until cond holds for the task's DetailedTask.
func (c client) await(id string, cond func(map[string]any) bool) map[string]any {
	c.t.Helper()
	var last map[string]any
	if !testsupport.Eventually(c.t, 10*time.Second, func() bool {
		last = c.ok("tasks/get", map[string]any{"taskId": id})
		return cond(last)
	}) {
		c.t.Fatalf("task %s: condition never held; last %v", id, last)
	}
	return last
}

func status(want string) func(map[string]any) bool {
	return func(d map[string]any) bool { return d["status"] == want }
}

func TestCancelStopsTheRunAndSettlesCancelled(t *testing.T) {
	url, _ := start(t, tasksbackend.Options{})
	c := client{t: t, url: url, tasks: true}
	id := c.create("slow_compute", map[string]any{"seconds": 3600})
	if ack := c.ok("tasks/cancel", map[string]any{"taskId": id}); len(ack) != 2 || ack["resultType"] != "complete" {
		t.Fatalf("cancel ack = %v, want only resultType and _meta", ack)
	}
	d := c.await(id, status("cancelled"))
	if _, has := d["result"]; has {
		t.Fatalf("a cancelled task carries a result: %v", d)
	}
	// A task waiting for input is cancelled the same way.
	id = c.create("confirm_delete", map[string]any{"filename": "x"})
	c.await(id, status("input_required"))
	c.ok("tasks/cancel", map[string]any{"taskId": id})
	c.await(id, status("cancelled"))
}

func TestInputRoundsHoldPartialAnswers(t *testing.T) {
	url, _ := start(t, tasksbackend.Options{})
	c := client{t: t, url: url, tasks: true}
	id := c.create("multi_input", nil)
	d := c.await(id, func(d map[string]any) bool {
		reqs, _ := d["inputRequests"].(map[string]any)
		return len(reqs) == 2
	})
	var keys []string
	for k := range d["inputRequests"].(map[string]any) {
		keys = append(keys, k)
	}
	name, confirm := keys[0], keys[1]
	if strings.HasPrefix(confirm, "name") {
		name, confirm = confirm, name
	}
	c.ok("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		name:           map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}},
		"never-issued": map[string]any{"action": "accept"},
	}})
	d = c.ok("tasks/get", map[string]any{"taskId": id})
	reqs, _ := d["inputRequests"].(map[string]any)
	if d["status"] != "input_required" || len(reqs) != 1 || reqs[confirm] == nil {
		t.Fatalf("after a partial answer: %v, want input_required with %s alone", d, confirm)
	}
	c.ok("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		confirm: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
	}})
	d = c.await(id, status("completed"))
	text := d["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
	if text != "name=Ada confirm=true" {
		t.Fatalf("result text %q", text)
	}
}

func TestGatingAndHeaders(t *testing.T) {
	url, _ := start(t, tasksbackend.Options{FailDelay: time.Millisecond})
	plain := client{t: t, url: url}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r := plain.call(m, map[string]any{"taskId": "x", "inputResponses": map[string]any{}}, nil)
		if r.Error == nil || r.Error.Code != -32021 || r.status != http.StatusBadRequest {
			t.Errorf("%s without the extension: %d %+v, want 400 -32021", m, r.status, r.Error)
		}
	}
	if r := plain.call("tools/call", map[string]any{"name": "failing_job"}, nil); r.Error == nil || r.Error.Code != -32021 ||
		r.Error.Data["requiredCapabilities"] == nil {
		t.Errorf("a required tool without the extension: %+v, want -32021 naming the extension", r.Error)
	}
	if res := plain.ok("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}); res["resultType"] != "complete" {
		t.Errorf("an optional tool without the extension: %v, want a plain result", res)
	}
	c := client{t: t, url: url, tasks: true}
	id := c.create("failing_job", nil)
	if r := c.call("tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": "other"}); r.Error == nil || r.Error.Code != -32020 {
		t.Errorf("a mismatched Mcp-Name: %+v, want -32020", r.Error)
	}
	if r := c.call("tasks/get", map[string]any{"taskId": "unknown"}, nil); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("an unknown task: %+v, want -32602", r.Error)
	}
	for _, m := range []string{"tasks/result", "tasks/list"} {
		if r := c.call(m, map[string]any{"taskId": id}, nil); r.Error == nil || r.Error.Code != -32601 {
			t.Errorf("%s: %+v, want -32601", m, r.Error)
		}
	}
	d := c.await(id, status("completed"))
	if d["result"].(map[string]any)["isError"] != true {
		t.Errorf("failing_job: %v, want completed with isError", d)
	}
	id = c.create("protocol_error_job", nil)
	d = c.await(id, status("failed"))
	if e, _ := d["error"].(map[string]any); e == nil || e["code"] != float64(-32603) {
		t.Errorf("protocol_error_job: %v, want failed with a -32603 error", d)
	}
}

func TestTasksExpireAfterTheirTTL(t *testing.T) {
	url, _ := start(t, tasksbackend.Options{TTL: 300 * time.Millisecond})
	c := client{t: t, url: url, tasks: true}
	id := c.create("slow_compute", map[string]any{"seconds": 0})
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		r := c.call("tasks/get", map[string]any{"taskId": id}, nil)
		return r.Error != nil && r.Error.Code == -32602
	}) {
		t.Fatal("a task outlived its TTL")
	}
}

func TestListenStreamsTaskNotifications(t *testing.T) {
	url, _ := start(t, tasksbackend.Options{})
	c := client{t: t, url: url, tasks: true}
	id := c.create("confirm_delete", map[string]any{"filename": "y"})
	c.await(id, status("input_required"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen", "params": map[string]any{
		"notifications": map[string]any{"taskIds": []string{id, "unknown"}},
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    tasksbackend.ProtocolVersion,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{tasksbackend.ExtensionID: map[string]any{}}},
		}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Mcp-Protocol-Version", tasksbackend.ProtocolVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan map[string]any, 8)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				_ = json.Unmarshal([]byte(data), &m)
				events <- m
			}
		}
	}()
	ack := <-events
	honoured := ack["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"].([]any)
	if ack["method"] != "notifications/subscriptions/acknowledged" || len(honoured) != 1 || honoured[0] != id {
		t.Fatalf("ack = %v, want the known task alone", ack)
	}
	key := ""
	for k := range c.ok("tasks/get", map[string]any{"taskId": id})["inputRequests"].(map[string]any) {
		key = k
	}
	c.ok("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}})
	for n := range events {
		p := n["params"].(map[string]any)
		if n["method"] != "notifications/tasks" || p["taskId"] != id {
			t.Fatalf("unexpected event %v", n)
		}
		if p["status"] == "completed" {
			if p["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != "L1" || p["result"] == nil {
				t.Fatalf("completed notification %v: want the result, tagged with the listen's id", p)
			}
			return
		}
	}
	t.Fatal("the listen stream ended before the task completed")
}
