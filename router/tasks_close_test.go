package router_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// everyToolATask is a tasks: block that makes every tool a task when the
// request declares the extension.
type everyToolATask struct{}

func (everyToolATask) Mode(string) router.TaskMode { return router.TaskOptional }
func (everyToolATask) InputFirst(string) bool      { return false }
func (everyToolATask) ResultTTL() time.Duration    { return time.Minute }

// A gateway-run task's backend call unwinds a little after its run ends:
// closing the runner, then the router, waits for it, so its last backend
// exchange (the per-request backend session's DELETE) happens before the
// backend clients close, as a parked call's does.
func TestTasks_RouterCloseWaitsForTheTasksBackendCalls(t *testing.T) {
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	runner, err := taskrun.New(taskrun.Options{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runner.Close)
	f := newFixtureOpts(t, router.Options{Tasks: runner}, backendSpec{Key: "legacy",
		Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: func(b *router.Backend) { b.Tasks = everyToolATask{} }})
	changed := make(chan string, 16) // the ids of tasks whose status changed
	stop, err := mem.Subscribe(t.Context(), func(m store.BusMessage) {
		if _, id, ok := taskrun.StatusChanged(m); ok {
			select {
			case changed <- id:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	caps := json.RawMessage(`{"elicitation":{},"extensions":{"` + wire.ExtensionTasks + `":{}}}`)
	params, _ := json.Marshal(map[string]any{"name": "confirm", "arguments": map[string]any{"question": "proceed?"}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    wire.ModernProtocolVersion,
		"io.modelcontextprotocol/clientCapabilities": caps,
	}})
	res := result(t, f.Router.Handle(t.Context(), &router.Call{VHost: f.VHost, Principal: "alice", Header: http.Header{},
		Request: &jsonrpc.Request{ID: mustID(5), Method: "tools/call", Params: params},
		Caller:  &router.ModernClient{ClientCapabilities: caps}}))
	if res["resultType"] != "task" {
		t.Fatalf("not a task: %v", res)
	}
	owner := taskid.PrincipalDigest("alice")
	var id string
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		select {
		case id = <-changed:
		default:
		}
		task, err := runner.Get(t.Context(), owner, id)
		return id != "" && err == nil && task.Status == store.TaskInputRequired
	}) {
		t.Fatal("the task's call never asked its question")
	}
	b := f.Backends["legacy"]
	deletes := b.Deletes()
	runner.Close()
	f.Router.Close()
	if got := b.Deletes() - deletes; got != 1 {
		t.Fatalf("%d DELETEs once the runner and the router closed (task %s), want the task's backend session's", got, id)
	}
}
