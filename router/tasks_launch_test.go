package router

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// A launched task's run (RunTask) opens its run spec with the gateway's
// task key, bound to the task: a spec sealed under another key, or for
// another task, or naming a backend no longer configured, fails the task
// saying so, and calls no backend; a second delivery is left alone.
func TestTasks_RunTaskRefusesASpecThatIsNotTheTasks(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	runner, err := taskrun.New(taskrun.Options{Store: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runner.Close)
	r := New(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"fx": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}},
	}}}, Options{Store: mem, Tasks: runner, CursorSecret: secret})
	t.Cleanup(r.Close)
	key, err := r.tasks.taskKeys.Sign(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	good := &sealed.TaskRun{VHost: "v", Backend: "fx", Name: "slow", Public: "slow", Params: json.RawMessage(`{"name":"slow"}`), Principal: "alice"}
	gone := *good
	gone.Backend = "removed"

	for name, tc := range map[string]struct {
		seal func(id string) ([]byte, error)
		want string
	}{
		"another key": {func(id string) ([]byte, error) {
			return sealed.SealTaskRun([]byte("another gateway's key"), "owner", id, good)
		}, "its run spec does not open"},
		"another task": {func(string) ([]byte, error) {
			return sealed.SealTaskRun(key, "owner", "another-task", good)
		}, "its run spec does not open"},
		"tampered": {func(id string) ([]byte, error) {
			b, err := sealed.SealTaskRun(key, "owner", id, good)
			b[len(b)-1] ^= 1
			return b, err
		}, "its run spec does not open"},
		"backend removed": {func(id string) ([]byte, error) {
			return sealed.SealTaskRun(key, "owner", id, &gone)
		}, `backend "removed" of virtual host "v" is no longer configured`},
	} {
		t.Run(name, func(t *testing.T) {
			task, err := runner.Create(t.Context(), taskrun.Spec{Owner: "owner", VHost: "v", Backend: "fx", Tool: "slow", Run: tc.seal}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RunTask(t.Context(), "owner", task.ID); err != nil {
				t.Fatal(err)
			}
			got, err := runner.Get(t.Context(), "owner", task.ID)
			if err != nil || got.Status != store.TaskFailed || !strings.HasPrefix(got.StatusMessage, "the task could not be run: ") ||
				!strings.Contains(got.StatusMessage, tc.want) || got.Run != nil {
				t.Fatalf("after the run: %+v (%v)", got, err)
			}
			if err := r.RunTask(t.Context(), "owner", task.ID); !errors.Is(err, taskrun.ErrNotAdopted) {
				t.Fatalf("a second delivery: %v", err)
			}
		})
	}
}
