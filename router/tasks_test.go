package router

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The gateway's side of a task passed through, with no backend: a
// CreateTaskResult leaves under a sealed id that opens only for its
// caller and vhost and names the backend's own id; other results pass
// untouched; tasks/* without the extension is -32021, and an id that does
// not open (forged, another caller's) is one -32602 before any backend.
func TestTasks_SealedIDsAndRefusals(t *testing.T) {
	v := offlineVHost(t, "fx", "two")
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	c := &Call{VHost: "v", Principal: "alice", Request: &jsonrpc.Request{Method: "tools/call"}}
	tg := &target{backend: "fx", name: "slow", public: "fx-slow", kind: "tool"}

	plain := json.RawMessage(`{"content":[]}`)
	if out, isTask, err := r.tasks.sealTaskResult(t.Context(), v, c, tg, plain); err != nil || isTask || string(out) != string(plain) {
		t.Fatalf("a plain result: %s %v %v", out, isTask, err)
	}
	out, isTask, err := r.tasks.sealTaskResult(t.Context(), v, c, tg,
		json.RawMessage(`{"resultType":"task","taskId":"backend-7","status":"working","ttlMs":60000}`))
	if err != nil || !isTask {
		t.Fatalf("a task: %v %v", isTask, err)
	}
	var created struct{ TaskID string }
	_ = json.Unmarshal(out, &created)
	if !strings.HasPrefix(created.TaskID, "mt1.") || strings.Contains(string(out), "backend-7") || !strings.Contains(string(out), `"ttlMs":60000`) {
		t.Fatalf("the client sees %s", out)
	}
	key, _ := r.tasks.taskKeys.Sign(t.Context())
	claims, err := taskid.Open(key, created.TaskID, "v", taskid.PrincipalDigest("alice"), time.Now())
	if err != nil || claims.Backend != "fx" || claims.TaskID != "backend-7" || claims.Tool != "fx-slow" {
		t.Fatalf("the sealed id holds %+v (%v)", claims, err)
	}
	if _, err := taskid.Open(key, created.TaskID, "v", taskid.PrincipalDigest("bob"), time.Now()); err == nil {
		t.Fatal("bob opens alice's task id")
	}

	ask := func(principal, caps, token string) *jsonrpc.Error {
		params, _ := json.Marshal(map[string]string{"taskId": token})
		c := &Call{VHost: "v", Principal: principal, Request: &jsonrpc.Request{Method: "tasks/get", Params: params},
			Caller: &ModernClient{ClientCapabilities: json.RawMessage(caps)}}
		e := rpcErrOf(r.tasks.routeTask(t.Context(), v, c))
		return e
	}
	const withTasks = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	if e := ask("alice", `{}`, created.TaskID); e == nil || e.Code != wire.CodeMissingClientCapability || !strings.Contains(string(e.Data), wire.ExtensionTasks) {
		t.Fatalf("without the extension: %+v", e)
	}
	for who, token := range map[string]string{"bob": created.TaskID, "alice": created.TaskID[:len(created.TaskID)-3] + "AAA"} {
		if e := ask(who, withTasks, token); e == nil || e.Code != CodeInvalidParams || !strings.Contains(e.Message, "unknown task") {
			t.Fatalf("%s with %q: %+v", who, token, e)
		}
	}
	if e := ask("alice", withTasks, ""); e == nil || e.Code != CodeInvalidParams {
		t.Fatalf("no taskId: %+v", e)
	}
}

// A backend's DetailedTask reaches the client under the client's id and,
// on a multi-backend vhost, with the URIs of its inlined result published
// as a synchronous call's are; the rest of it byte for byte.
func TestTasks_ClientTaskResultPublishesURIs(t *testing.T) {
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"fx":  {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}},
		"two": {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}},
	}}, "one": {Name: "one", Backends: map[string]*Backend{"fx": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}}}}})
	t.Cleanup(table.close)
	detailed := json.RawMessage(`{"taskId":"b-1","status":"completed","result":{"content":[{"type":"resource_link","uri":"file:///a.txt","name":"a"}]}}`)
	got := string(clientTaskResult(table.vhosts["v"], "fx", "mt1.x", detailed))
	want := naming.PublishURI("fx", "file:///a.txt")
	if !strings.Contains(got, `"taskId":"mt1.x"`) || !strings.Contains(got, want) || strings.Contains(got, `"uri":"file:///a.txt"`) {
		t.Fatalf("multi-backend: %s (want the URI published as %s)", got, want)
	}
	if got := string(clientTaskResult(table.vhosts["one"], "fx", "mt1.x", detailed)); got != strings.Replace(string(detailed), `"b-1"`, `"mt1.x"`, 1) {
		t.Fatalf("single backend: %s", got)
	}
}
