package taskrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/store"
)

// instances returns n runners on one Redis (one prefix, n handles: n
// instances, or n Lambda execution environments).
func instances(t *testing.T, n int, lease time.Duration) []*taskrun.Runner {
	t.Helper()
	prefix := "adopt" + fmt.Sprint(time.Now().UnixNano())
	var out []*taskrun.Runner
	for range n {
		s, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, instance(t, s, lease))
	}
	return out
}

var done = json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":false}`)

// A task created for another instance to run is run once, by whichever
// takes it over first, however many times its run is delivered (Lambda
// retries an asynchronous invocation, and may deliver one twice); its run
// spec is handed to the run and dropped from the record.
func TestAdoptRunsACreatedTaskOnce(t *testing.T) {
	rs := instances(t, 3, time.Second)
	creator := rs[0]
	withRun := spec
	withRun.Run = func(id string) ([]byte, error) { return []byte("spec of " + id), nil }
	task, err := creator.Create(t.Context(), withRun, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := await(t, creator, task.ID, status(store.TaskWorking)); string(got.Run) != "spec of "+task.ID {
		t.Fatalf("the record's run spec: %q", got.Run)
	}
	var mu sync.Mutex
	ran, specs := 0, []string{}
	var wg sync.WaitGroup
	results := make([]error, 0, 4)
	for _, r := range []*taskrun.Runner{rs[1], rs[2], rs[1], rs[2]} {
		wg.Go(func() {
			err := r.Adopt(t.Context(), spec.Owner, task.ID, func(loaded *store.Task) (taskrun.Step, error) {
				mu.Lock()
				specs = append(specs, string(loaded.Run))
				mu.Unlock()
				return func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
					mu.Lock()
					ran++
					mu.Unlock()
					if cur, err := creator.Get(ctx, spec.Owner, task.ID); err != nil || cur.Run != nil {
						t.Errorf("while it runs, the record holds its run spec %q (%v)", cur.Run, err)
					}
					time.Sleep(100 * time.Millisecond)
					return taskrun.Outcome{Result: done}, nil
				}, nil
			})
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	adopted := 0
	for _, err := range results {
		switch {
		case err == nil:
			adopted++
		case !errors.Is(err, taskrun.ErrNotAdopted):
			t.Fatalf("Adopt: %v", err)
		}
	}
	if adopted != 1 || ran != 1 || len(specs) != 1 || specs[0] != "spec of "+task.ID {
		t.Fatalf("adopted %d, ran %d, specs %q", adopted, ran, specs)
	}
	got := await(t, creator, task.ID, status(store.TaskCompleted))
	if string(got.Result) != string(done) || got.Run != nil {
		t.Fatalf("settled: result %s, run spec %q", got.Result, got.Run)
	}
	// A retry after the end leaves it alone.
	if err := rs[2].Adopt(t.Context(), spec.Owner, task.ID, nil); !errors.Is(err, taskrun.ErrNotAdopted) {
		t.Fatalf("Adopt of a settled task: %v", err)
	}
	if err := rs[2].Adopt(t.Context(), spec.Owner, "nosuch", nil); !errors.Is(err, taskrun.ErrUnknown) {
		t.Fatalf("Adopt of no task: %v", err)
	}
}

// A run whose context ends (the function's time limit ahead) settles the
// task failed, saying so; the step is stopped.
func TestAdoptedRunEndsAtItsTimeLimit(t *testing.T) {
	rs := instances(t, 2, time.Second)
	task, err := rs[0].Create(t.Context(), spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	stopped := make(chan struct{})
	err = rs[1].Adopt(ctx, spec.Owner, task.ID, func(*store.Task) (taskrun.Step, error) {
		return func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
			<-ctx.Done()
			close(stopped)
			return taskrun.Outcome{}, context.Cause(ctx)
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-stopped
	got := await(t, rs[0], task.ID, status(store.TaskFailed))
	if got.StatusMessage != taskrun.ErrTimeLimit.Error() {
		t.Fatalf("statusMessage %q", got.StatusMessage)
	}
}

// A run spec that cannot be used fails the task, naming why.
func TestAdoptFailsATaskItCannotRun(t *testing.T) {
	rs := instances(t, 2, time.Second)
	task, err := rs[0].Create(t.Context(), spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = rs[1].Adopt(t.Context(), spec.Owner, task.ID, func(*store.Task) (taskrun.Step, error) {
		return nil, errors.New("its run spec does not open")
	})
	if err != nil {
		t.Fatal(err)
	}
	got := await(t, rs[0], task.ID, status(store.TaskFailed))
	if got.StatusMessage != "the task could not be run: its run spec does not open" {
		t.Fatalf("statusMessage %q", got.StatusMessage)
	}
}

// A created task nobody takes over fails once its placeholder lease
// lapses, saying it never started.
func TestACreatedTaskNeverTakenOverFails(t *testing.T) {
	rs := instances(t, 2, time.Second)
	task, err := rs[0].Create(t.Context(), spec, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	got := await(t, rs[1], task.ID, status(store.TaskFailed))
	if got.StatusMessage != taskrun.NotStartedMessage {
		t.Fatalf("statusMessage %q", got.StatusMessage)
	}
	if err := rs[1].Adopt(t.Context(), spec.Owner, task.ID, nil); !errors.Is(err, taskrun.ErrNotAdopted) {
		t.Fatalf("Adopt of a task settled for want of a runner: %v", err)
	}
}

// A task cancelled before its run took it over is settled cancelled by
// the run, which never calls the backend.
func TestAdoptSettlesATaskCancelledBeforeItsRun(t *testing.T) {
	rs := instances(t, 2, time.Second)
	task, err := rs[0].Create(t.Context(), spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs[0].Cancel(t.Context(), spec.Owner, task.ID); err != nil {
		t.Fatal(err)
	}
	err = rs[1].Adopt(t.Context(), spec.Owner, task.ID, func(*store.Task) (taskrun.Step, error) {
		t.Error("the run of a cancelled task was built")
		return nil, errors.New("unreachable")
	})
	if err != nil {
		t.Fatal(err)
	}
	await(t, rs[0], task.ID, status(store.TaskCancelled))
}
