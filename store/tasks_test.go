package store_test

// The Tasks contract (tasks.go), on every store.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

func TestTasks_CreateLoadAndTheOwnersBound(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		task := storetest.SampleTask("alice", "t1", "inst-a")
		task.StatusMessage = "starting"
		storetest.MustCreateTask(t, s, task, 2)
		got := storetest.LoadTask(t, s, "alice", "t1")
		if got.Version != 1 || got.Runner != "inst-a" || got.LeaseLapsed || got.Tool != "slow_compute" ||
			got.StatusMessage != "starting" || !got.CreatedAt.Equal(task.CreatedAt) || got.TTL != time.Hour || got.PollInterval != time.Second {
			t.Fatalf("loaded %+v", got)
		}
		if err := s.CreateTask(ctx, storetest.SampleTask("alice", "t1", "inst-b"), storetest.Running(2), time.Minute, time.Hour); !errors.Is(err, store.ErrTaskExists) {
			t.Fatalf("a second t1: %v, want ErrTaskExists", err)
		}
		storetest.MustCreateTask(t, s, storetest.SampleTask("alice", "t2", "inst-a"), 2)
		if err := s.CreateTask(ctx, storetest.SampleTask("alice", "t3", "inst-a"), storetest.Running(2), time.Minute, time.Hour); !errors.Is(err, store.ErrTaskLimit) {
			t.Fatalf("a third running task over a limit of 2: %v, want ErrTaskLimit", err)
		}
		storetest.MustCreateTask(t, s, storetest.SampleTask("bob", "t3", "inst-a"), 2) // another owner's bound
		if _, err := s.LoadTask(ctx, "bob", "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("alice's task under bob: %v, want ErrNotFound", err)
		}
		// Settling a task frees its place.
		got = storetest.LoadTask(t, s, "alice", "t2")
		got.Status, got.Result = store.TaskCompleted, json.RawMessage(`{"content":[]}`)
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settle t2: %v, %v", ok, err)
		}
		storetest.MustCreateTask(t, s, storetest.SampleTask("alice", "t3", "inst-a"), 2)
		if _, ok := s.(*store.Redis); ok {
			if d, ok := pttl(t, s, store.TaskKey(testPrefix, "alice", "t2")); !ok || d <= 50*time.Minute || d > time.Hour {
				t.Fatalf("a settled task's PTTL = %v, want its TTL (1h)", d)
			}
			if d, ok := pttl(t, s, store.TaskKey(testPrefix, "alice", "t1")); !ok || d <= 0 || d > time.Hour {
				t.Fatalf("a running task's PTTL = %v, want its life", d)
			}
			if d, ok := pttl(t, s, store.TasksLiveKey(testPrefix, "alice")); !ok || d <= 0 || d > time.Minute {
				t.Fatalf("the live set's PTTL = %v, want its latest lease (1m)", d)
			}
		}
	})
}

func TestTasks_ASettledTaskExpiresAfterItsTTL(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.MustCreateTask(t, s, storetest.SampleTask("frank", "done", "inst-a"), 5)
		got := storetest.LoadTask(t, s, "frank", "done")
		got.Status, got.TTL = store.TaskCompleted, 300*time.Millisecond
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settle: %v, %v", ok, err)
		}
		storetest.LoadTask(t, s, "frank", "done") // still there within its TTL
		waitTTL(t, s, 300*time.Millisecond)
		if _, err := s.LoadTask(ctx, "frank", "done"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after its TTL: %v, want ErrNotFound", err)
		}
	})
}

// An owner's finished tasks are charged what their records hold while
// they are kept: a task with a result that would take them past the
// budget is refused (and nothing written), one that fails or is
// cancelled is charged but never refused, a new task is refused once
// they hold the budget, another owner is not, and the charges leave with
// the tasks when their keeping ends.
func TestTasks_FinishedTasksHoldAtMostTheirBudget(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		const budget = 4000
		limits := store.TaskLimits{Running: 5, FinishedBytes: budget}
		create := func(owner, id string) error {
			return s.CreateTask(ctx, storetest.SampleTask(owner, id, "inst-a"), limits, time.Minute, time.Hour)
		}
		settle := func(id, status string, result []byte) (int64, error) {
			t.Helper()
			got := storetest.LoadTask(t, s, "gina", id)
			got.Status, got.TTL = status, 3*time.Second
			if result != nil {
				got.Result = json.RawMessage(`{"content":[{"type":"text","text":"` + string(result) + `"}]}`)
			}
			rec, _ := json.Marshal(got)
			ok, err := s.UpdateTask(ctx, got)
			if err == nil && !ok {
				t.Fatalf("settle %s: a version race nobody ran", id)
			}
			return store.TaskCharge(len(rec)), err
		}
		big := bytes.Repeat([]byte("x"), 1500)
		for _, id := range []string{"t1", "t2"} {
			if err := create("gina", id); err != nil {
				t.Fatalf("create %s: %v", id, err)
			}
		}
		c1, err := settle("t1", store.TaskCompleted, big)
		if err != nil || c1 >= budget/2+budget/4 {
			t.Fatalf("t1 (charged %d): %v", c1, err)
		}
		// t2's result would take the owner past its budget: refused, unwritten.
		if _, err := settle("t2", store.TaskCompleted, big); !errors.Is(err, store.ErrTaskBudget) {
			t.Fatalf("a result past the budget: %v, want ErrTaskBudget", err)
		}
		if got := storetest.LoadTask(t, s, "gina", "t2"); got.Version != 1 || got.Status != store.TaskWorking || got.Runner == "" {
			t.Fatalf("a refused settle wrote something: %+v", got)
		}
		// Failing it always passes, and is charged.
		c2, err := settle("t2", store.TaskFailed, nil)
		if err != nil {
			t.Fatalf("failing t2: %v", err)
		}
		// Below the budget tasks start; each that ends is charged, past it too.
		held := c1 + c2
		for i := 3; held < budget; i++ {
			id := fmt.Sprint("t", i)
			if err := create("gina", id); err != nil {
				t.Fatalf("%s with %d of %d bytes held: %v", id, held, budget, err)
			}
			c, err := settle(id, store.TaskCancelled, nil)
			if err != nil {
				t.Fatalf("cancelling %s: %v", id, err)
			}
			held += c
		}
		// Now at (past) the budget: no new task; another owner is not affected.
		if err := create("gina", "next"); !errors.Is(err, store.ErrTaskBudget) {
			t.Fatalf("a new task with %d of %d bytes held: %v, want ErrTaskBudget", held, budget, err)
		}
		if err := create("hank", "next"); err != nil {
			t.Fatalf("another owner: %v", err)
		}
		if _, ok := s.(*store.Redis); ok {
			for _, key := range []string{store.TasksDoneKey(testPrefix, "gina"), store.TasksChargesKey(testPrefix, "gina"), store.TasksBytesKey(testPrefix, "gina")} {
				if d, ok := pttl(t, s, key); !ok || d <= 0 || d > 3*time.Second {
					t.Fatalf("%s PTTL = %v, want the latest keeping (3s)", key, d)
				}
			}
		}
		// Their keeping ends: the charges go with them.
		if !testsupport.Eventually(t, 20*time.Second, func() bool { return create("gina", "next") == nil }) {
			t.Fatal("the budget was never freed once the finished tasks expired")
		}
	})
}
