package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/taskstools"
)

// A gateway-run task on Lambda: the invocation that creates it answers
// the CreateTaskResult and launches the run as an asynchronous invocation
// of the function itself; that invocation runs the backend call to its
// end, and a later invocation answers tasks/get with the result.
//
// The Runtime Interface Emulator serves one invocation at a time and has
// no asynchronous invocation (its invoke endpoint runs every event
// synchronously), so the launch cannot reach it while the creating
// invocation is running. The function's real launcher (the AWS SDK's
// Invoke, InvocationType Event) is pointed at a fake Lambda API in the
// test (AWS_ENDPOINT_URL_LAMBDA), which records the event and answers
// 202 as Lambda does; the test then delivers that very event to the
// emulator as the next invocation, as Lambda's event queue would. It
// delivers it twice more, as Lambda's retries could: the task is run
// once.

// fakeLambdaAPI is the Lambda Invoke API as far as an asynchronous
// invoke goes: each request is recorded.
type fakeLambdaAPI struct {
	srv    *httptest.Server
	events chan invokeRecord
	deny   atomic.Bool // answer as Lambda does to a role without lambda:InvokeFunction
}

type invokeRecord struct {
	path, invocationType, authorization string
	payload                             []byte
}

func startFakeLambdaAPI(t *testing.T) *fakeLambdaAPI {
	f := &fakeLambdaAPI{events: make(chan invokeRecord, 8)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if f.deny.Load() {
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"Message":"User: arn:aws:sts::123456789012:assumed-role/mcpgw-GatewayFunctionRole/x is not authorized to perform: lambda:InvokeFunction"}`)
			return
		}
		f.events <- invokeRecord{path: r.URL.Path, invocationType: r.Header.Get("X-Amz-Invocation-Type"),
			authorization: r.Header.Get("Authorization"), payload: body}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLambdaAPI) next(t *testing.T) invokeRecord {
	t.Helper()
	select {
	case rec := <-f.events:
		return rec
	case <-time.After(10 * time.Second):
		t.Fatal("the function launched no asynchronous invocation")
		return invokeRecord{}
	}
}

const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// tasksFunction is a gateway of one vhost, jobs, whose one backend fx
// (taskstools, a stateful go-sdk server) runs tasks, and the environment
// of its function, whose launches go to api.
type tasksFunction struct {
	tools *taskstools.Tools
	api   *fakeLambdaAPI
	env   []string
}

func newTasksFunction(t *testing.T) *tasksFunction {
	t.Helper()
	url, tools, stop, err := taskstools.Start(t.Context(), "127.0.0.1:0", false, taskstools.Options{FailDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	api := startFakeLambdaAPI(t)
	block := strings.ReplaceAll(taskstools.GatewayTasksConfig, "\n", "\n        ")
	config := fmt.Sprintf(`allowed_hosts: [%s]
auth:
  mode: jwt
  jwt:
    issuer: %s
    audience: %s
    hs_secret_env: %s
virtual_hosts:
  jobs:
    backends:
      fx:
        url: %s
        %s
`, functionURLDomain, testsupport.JWTIssuer, testsupport.JWTAudience, jwtSecretEnv, url, block)
	return &tasksFunction{tools: tools, api: api, env: []string{
		jwtSecretEnv + "=" + string(jwtSecret),
		envConfigYAML + "=" + config,
		envRedisURL + "=" + redisSrv.URL(),
		"AWS_LAMBDA_FUNCTION_NAME=mcpgw-tasks-test",
		"AWS_ENDPOINT_URL_LAMBDA=" + api.srv.URL,
		"AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDTEST",
		"AWS_SECRET_ACCESS_KEY=test-secret",
		"AWS_CONFIG_FILE=/nonexistent",
		"AWS_SHARED_CREDENTIALS_FILE=/nonexistent",
		"AWS_EC2_METADATA_DISABLED=true",
	}}
}

// create calls tool as a task through ep and returns the task's id and
// the run-task event its creation launched.
func (f *tasksFunction) create(t *testing.T, c *testsupport.Client, ep testsupport.Endpoint, tool string, args map[string]any) (token string, event []byte) {
	t.Helper()
	created := c.ModernRequest(ep, "tools/call", map[string]any{"name": tool, "arguments": args}, tasksCaps).Result()
	token, _ = created["taskId"].(string)
	if created["resultType"] != "task" || token == "" || created["status"] != "working" {
		t.Fatalf("created: %v", created)
	}
	return token, f.api.next(t).payload
}

func awaitLambdaTask(t *testing.T, c *testsupport.Client, ep testsupport.Endpoint, token, status string) map[string]any {
	t.Helper()
	var got map[string]any
	if !testsupport.Eventually(t, 15*time.Second, func() bool {
		got = c.ModernRequest(ep, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
		return got["status"] == status
	}) {
		t.Fatalf("task %s never %s; last %v", token, status, got)
	}
	return got
}

func TestFunctionURL_TaskRunsInAnAsynchronousInvocation(t *testing.T) {
	t.Parallel()
	f := newTasksFunction(t)
	tools, api := f.tools, f.api
	rie := startRIE(t, f.env...)
	ep := &functionURL{rie: rie, domain: functionURLDomain}
	alice := &testsupport.Client{T: t, VHost: "jobs", Token: testsupport.MintJWT(t, jwtSecret, testsupport.StdClaims("alice"))}

	created := alice.ModernRequest(ep, "tools/call", map[string]any{"name": "slow_compute",
		"arguments": map[string]any{"seconds": 1, "label": "on-lambda"}}, tasksCaps).Result()
	token, _ := created["taskId"].(string)
	if created["resultType"] != "task" || token == "" || created["status"] != "working" {
		t.Fatalf("created: %v", created)
	}
	launch := api.next(t)
	if launch.path != "/2015-03-31/functions/mcpgw-tasks-test/invocations" || launch.invocationType != "Event" ||
		!strings.Contains(launch.authorization, "AWS4-HMAC-SHA256") {
		t.Fatalf("the launch: %s, type %q, auth %q", launch.path, launch.invocationType, launch.authorization)
	}
	var ev map[string]string
	if err := json.Unmarshal(launch.payload, &ev); err != nil || ev["mcpgw"] != "run-task" || ev["owner"] == "" || ev["id"] == "" || len(ev) != 3 {
		t.Fatalf("the launch event: %s (%v)", launch.payload, err)
	}
	if strings.Contains(string(launch.payload), "on-lambda") {
		t.Fatalf("the launch event carries the call's arguments: %s", launch.payload)
	}
	// Nothing runs until the event is delivered.
	if got := alice.ModernRequest(ep, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result(); got["status"] != "working" {
		t.Fatalf("before the run: %v", got)
	}
	if n := tools.Calls(); n != 0 {
		t.Fatalf("the backend was called %d times before the run", n)
	}
	// The task's record holds its run spec sealed: nothing of the call
	// in clear.
	keys, err := redisSrv.Client().Keys(t.Context(), "mcpgw:{tasks:*}:task:"+ev["id"]).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the task's key: %v %v", keys, err)
	}
	rec, err := redisSrv.Client().HGet(t.Context(), keys[0], "rec").Result()
	if err != nil || !strings.Contains(rec, `"run":`) || strings.Contains(rec, "on-lambda") || strings.Contains(rec, "alice") {
		t.Fatalf("the stored record: %s (%v)", rec, err)
	}

	// The asynchronous invocation: it runs the call to its end.
	var ran map[string]string
	unmarshalPayload(t, rie.invoke(launch.payload), &ran)
	if ran["status"] != "ran" || ran["id"] != ev["id"] {
		t.Fatalf("the run-task invocation answered %v", ran)
	}
	done := alice.ModernRequest(ep, "tasks/get", map[string]any{"taskId": token}, tasksCaps).Result()
	if done["status"] != "completed" || !strings.Contains(fmt.Sprint(done["result"]), `slow_compute "on-lambda" done after 1s`) {
		t.Fatalf("after the run: %v", done)
	}
	if rec, _ := redisSrv.Client().HGet(t.Context(), keys[0], "rec").Result(); strings.Contains(rec, `"run":`) {
		t.Fatalf("the run spec outlived the run: %s", rec)
	}

	// Lambda's retries, or a duplicate delivery: left alone.
	for range 2 {
		var again map[string]string
		unmarshalPayload(t, rie.invoke(launch.payload), &again)
		if again["status"] != "skipped" {
			t.Fatalf("a second delivery answered %v", again)
		}
	}
	if n := tools.Calls(); n != 1 {
		t.Fatalf("the backend was called %d times, want once", n)
	}
	if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Contains(rie.Output(), "left alone") }) {
		t.Errorf("no log line for the skipped deliveries:\n%s", rie.Output())
	}

	// A launch Lambda refuses (the role may not invoke the function): the
	// call fails without the AWS error, which the log has.
	api.deny.Store(true)
	r := alice.ModernRequest(ep, "tools/call", map[string]any{"name": "slow_compute",
		"arguments": map[string]any{"seconds": 1, "label": "denied"}}, tasksCaps)
	if e := r.Error(); e == nil || e.Code != -32603 || !strings.Contains(e.Message, "the task could not be started") ||
		strings.Contains(e.Message, "123456789012") {
		t.Fatalf("a refused launch: %d %+v", r.Status, r.Error())
	}
	// The function's log reaches the test through a pipe, possibly after
	// the answer: wait for the line rather than read what has arrived.
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		out := rie.Output()
		return strings.Contains(out, "launching its run failed") && strings.Contains(out, "AccessDenied")
	}) {
		t.Errorf("no log line naming why the launch failed:\n%s", rie.Output())
	}
}

// Two execution environments, as Lambda runs them at once: A serves the
// client, B runs the tasks. The backend's question becomes an input round
// of the task, seen and answered through A while B's run waits for it; a
// task cancelled through A stops on B; a task that runs past B's time
// limit fails, saying so, before Lambda would stop the invocation; last,
// an input_before_task tool's first question, asked by the run on B while
// A's invocation waits for it, is A's answer to the call, and the retry
// that answers it gets the task.
func TestFunctionURL_TaskAnsweredAcrossEnvironmentsAndItsTimeLimit(t *testing.T) {
	t.Parallel()
	f := newTasksFunction(t)
	a := &functionURL{rie: startRIE(t, f.env...), domain: functionURLDomain}
	const limit = 10 * time.Second // B's: the run gets 8 s of it
	b := startRIE(t, append(f.env, fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", int(limit.Seconds())))...)
	alice := &testsupport.Client{T: t, VHost: "jobs", Token: testsupport.MintJWT(t, jwtSecret, testsupport.StdClaims("alice"))}

	runOnB := func(event []byte) <-chan map[string]string {
		out := make(chan map[string]string, 1)
		go func() {
			var res map[string]string
			payload, err := b.tryInvoke(event)
			if err == nil {
				err = json.Unmarshal(payload, &res)
			}
			if err != nil {
				t.Errorf("the run-task invocation: %v (%s)", err, payload)
			}
			out <- res
		}()
		return out
	}

	token, event := f.create(t, alice, a, "confirm_delete", map[string]any{"filename": "x.txt"})
	ran := runOnB(event)
	asking := awaitLambdaTask(t, alice, a, token, "input_required")
	reqs, _ := asking["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("input requests: %v", asking)
	}
	var key string
	for k, req := range reqs {
		key = k
		if m, _ := req.(map[string]any); m["method"] != "elicitation/create" {
			t.Fatalf("input request %v", req)
		}
	}
	alice.ModernRequest(a, "tasks/update", map[string]any{"taskId": token, "inputResponses": map[string]any{
		key: map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, tasksCaps)
	if res := <-ran; res["status"] != "ran" {
		t.Fatalf("the run-task invocation answered %v", res)
	}
	done := awaitLambdaTask(t, alice, a, token, "completed")
	if !strings.Contains(fmt.Sprint(done["result"]), "Deleted x.txt") {
		t.Fatalf("completed with %v", done["result"])
	}

	// Cancelled through A while it runs on B: the backend call stops.
	token, event = f.create(t, alice, a, "slow_compute", map[string]any{"seconds": 60, "label": "cancel-me"})
	ran = runOnB(event)
	waitStarted(t, f.tools.Started, "cancel-me")
	alice.ModernRequest(a, "tasks/cancel", map[string]any{"taskId": token}, tasksCaps)
	waitStarted(t, f.tools.Cancelled, "cancel-me")
	if res := <-ran; res["status"] != "ran" {
		t.Fatalf("the run-task invocation answered %v", res)
	}
	awaitLambdaTask(t, alice, a, token, "cancelled")

	token, event = f.create(t, alice, a, "slow_compute", map[string]any{"seconds": 60, "label": "too-long"})
	start := time.Now()
	ran = runOnB(event)
	waitStarted(t, f.tools.Started, "too-long")
	if res := <-ran; res["status"] != "ran" {
		t.Fatalf("the run-task invocation answered %v", res)
	}
	if took := time.Since(start); took >= limit {
		t.Fatalf("the run took %v: it reached the function's time limit of %v", took, limit)
	}
	failed := awaitLambdaTask(t, alice, a, token, "failed")
	if failed["statusMessage"] != "the task outlived the function's time limit" {
		t.Fatalf("failed with %v", failed)
	}
	waitStarted(t, f.tools.Cancelled, "too-long") // the backend call was stopped

	// input_before_task: the call on A waits for the run's first question,
	// asked on B, and answers it as the call's input_required round; the
	// retry with the answer gets the task, which B's run completes.
	ran = func() <-chan map[string]string {
		out := make(chan map[string]string, 1)
		go func() {
			select {
			case rec := <-f.api.events:
				out <- <-runOnB(rec.payload)
			case <-time.After(15 * time.Second):
				t.Error("the function launched no asynchronous invocation")
				out <- nil
			}
		}()
		return out
	}()
	first := alice.ModernRequest(a, "tools/call", map[string]any{"name": "test_tool_with_task"}, tasksCaps).Result()
	state, _ := first["requestState"].(string)
	questions, _ := first["inputRequests"].(map[string]any)
	if first["resultType"] != "input_required" || state == "" || len(questions) != 1 {
		t.Fatalf("the first answer of an input_before_task tool: %v", first)
	}
	answers := map[string]any{}
	for k := range questions {
		answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	created := alice.ModernRequest(a, "tools/call", map[string]any{"name": "test_tool_with_task",
		"requestState": state, "inputResponses": answers}, tasksCaps).Result()
	token, _ = created["taskId"].(string)
	if created["resultType"] != "task" || token == "" {
		t.Fatalf("the retry: %v", created)
	}
	if res := <-ran; res["status"] != "ran" {
		t.Fatalf("the run-task invocation answered %v", res)
	}
	greeted := awaitLambdaTask(t, alice, a, token, "completed")
	if !strings.Contains(fmt.Sprint(greeted["result"]), "Hello, Ada!") {
		t.Fatalf("completed with %v", greeted["result"])
	}
}

func waitStarted(t *testing.T, ch <-chan string, label string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == label {
				return
			}
		case <-timeout:
			t.Fatalf("the backend never reported %q", label)
		}
	}
}
