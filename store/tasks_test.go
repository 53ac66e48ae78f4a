package store_test

// The Tasks contract (tasks.go), on every store.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

func sampleTask(owner, id, runner string) *store.Task {
	at := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	return &store.Task{ID: id, Owner: owner, VHost: "demo", Backend: "fx", Tool: "slow_compute",
		Status: store.TaskWorking, CreatedAt: at, UpdatedAt: at, TTL: time.Hour, PollInterval: time.Second, Runner: runner}
}

func mustCreateTask(t *testing.T, s store.Store, task *store.Task, limit int) {
	t.Helper()
	if err := s.CreateTask(context.Background(), task, running(limit), time.Minute, time.Hour); err != nil {
		t.Fatalf("CreateTask(%s): %v", task.ID, err)
	}
}

// running is a bound on running tasks only.
func running(n int) store.TaskLimits { return store.TaskLimits{Running: n} }

func loadTask(t *testing.T, s store.Store, owner, id string) *store.Task {
	t.Helper()
	got, err := s.LoadTask(context.Background(), owner, id)
	if err != nil {
		t.Fatalf("LoadTask(%s): %v", id, err)
	}
	return got
}

func TestTasks_CreateLoadAndTheOwnersBound(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		task := sampleTask("alice", "t1", "inst-a")
		task.StatusMessage = "starting"
		mustCreateTask(t, s, task, 2)
		got := loadTask(t, s, "alice", "t1")
		if got.Version != 1 || got.Runner != "inst-a" || got.LeaseLapsed || got.Tool != "slow_compute" ||
			got.StatusMessage != "starting" || !got.CreatedAt.Equal(task.CreatedAt) || got.TTL != time.Hour || got.PollInterval != time.Second {
			t.Fatalf("loaded %+v", got)
		}
		if err := s.CreateTask(ctx, sampleTask("alice", "t1", "inst-b"), running(2), time.Minute, time.Hour); !errors.Is(err, store.ErrTaskExists) {
			t.Fatalf("a second t1: %v, want ErrTaskExists", err)
		}
		mustCreateTask(t, s, sampleTask("alice", "t2", "inst-a"), 2)
		if err := s.CreateTask(ctx, sampleTask("alice", "t3", "inst-a"), running(2), time.Minute, time.Hour); !errors.Is(err, store.ErrTaskLimit) {
			t.Fatalf("a third running task over a limit of 2: %v, want ErrTaskLimit", err)
		}
		mustCreateTask(t, s, sampleTask("bob", "t3", "inst-a"), 2) // another owner's bound
		if _, err := s.LoadTask(ctx, "bob", "t1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("alice's task under bob: %v, want ErrNotFound", err)
		}
		// Settling a task frees its place.
		got = loadTask(t, s, "alice", "t2")
		got.Status, got.Result = store.TaskCompleted, json.RawMessage(`{"content":[]}`)
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settle t2: %v, %v", ok, err)
		}
		mustCreateTask(t, s, sampleTask("alice", "t3", "inst-a"), 2)
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

func TestTasks_CompareAndSetLetsOneInstanceSettle(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		mustCreateTask(t, s, sampleTask("alice", "cas", "inst-a"), 5)
		// Two instances read version 1 and settle concurrently: one wins.
		var wg sync.WaitGroup
		wins := make(chan string, 2)
		readers := []*store.Task{loadTask(t, s, "alice", "cas"), loadTask(t, s, "alice", "cas")}
		for i, status := range []string{store.TaskCompleted, store.TaskFailed} {
			task := readers[i]
			wg.Go(func() {
				task.Status = status
				if ok, err := s.UpdateTask(ctx, task); err != nil {
					t.Error(err)
				} else if ok {
					wins <- status
				}
			})
		}
		wg.Wait()
		close(wins)
		var won []string
		for w := range wins {
			won = append(won, w)
		}
		if len(won) != 1 {
			t.Fatalf("winners %v, want exactly one", won)
		}
		got := loadTask(t, s, "alice", "cas")
		if got.Status != won[0] || got.Version != 2 || got.Runner != "" {
			t.Fatalf("after the race: status %s version %d runner %q; want %s, 2, none", got.Status, got.Version, got.Runner, won[0])
		}
		stale := sampleTask("alice", "cas", "")
		stale.Version = 1
		if ok, err := s.UpdateTask(ctx, stale); err != nil || ok {
			t.Fatalf("a stale version: %v, %v; want refused", ok, err)
		}
		if _, err := s.UpdateTask(ctx, sampleTask("alice", "absent", "")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an absent task: %v, want ErrNotFound", err)
		}
	})
}

func TestTasks_ALapsedLeaseIsSeenAndFreesItsPlace(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		task := sampleTask("carol", "lapse", "inst-a")
		if err := s.CreateTask(ctx, task, running(1), 200*time.Millisecond, time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.RenewTaskLease(ctx, "carol", "lapse", "inst-b", time.Minute); err != nil || ok {
			t.Fatalf("another instance renewed the lease: %v, %v", ok, err)
		}
		if ok, err := s.RenewTaskLease(ctx, "carol", "lapse", "inst-a", 200*time.Millisecond); err != nil || !ok {
			t.Fatalf("the runner's renewal: %v, %v", ok, err)
		}
		// The runner stops renewing (its instance died).
		var got *store.Task
		if !testsupport.Eventually(t, 5*time.Second, func() bool {
			got = loadTask(t, s, "carol", "lapse")
			return got.LeaseLapsed
		}) {
			t.Fatal("the lease never lapsed")
		}
		if ok, _ := s.RenewTaskLease(ctx, "carol", "lapse", "inst-a", time.Minute); ok {
			t.Fatal("a lapsed lease was renewed: the runner must stop")
		}
		mustCreateTask(t, s, sampleTask("carol", "next", "inst-b"), 1) // the lapsed one no longer counts
		// Whoever reads it settles it failed, once.
		got.Status, got.StatusMessage = store.TaskFailed, "the instance running the task stopped (its lease lapsed)"
		got.Error = json.RawMessage(`{"code":-32603,"message":"task runner lost"}`)
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settling the lapsed task: %v, %v", ok, err)
		}
		if got = loadTask(t, s, "carol", "lapse"); got.LeaseLapsed || got.Status != store.TaskFailed {
			t.Fatalf("after settling: %+v", got)
		}
	})
}

func TestTasks_AnswersAreHeldUntilTheRoundIsComplete(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		mustCreateTask(t, s, sampleTask("dave", "ask", "inst-a"), 5)
		task := loadTask(t, s, "dave", "ask")
		task.Status, task.Round = store.TaskInputRequired, 1
		task.InputRequests = map[string]json.RawMessage{
			"name-1":    json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?"}}`),
			"confirm-1": json.RawMessage(`{"method":"elicitation/create","params":{"message":"sure?"}}`),
		}
		if ok, err := s.UpdateTask(ctx, task); err != nil || !ok {
			t.Fatalf("new round: %v, %v", ok, err)
		}
		msgs, _ := collect(t, s)
		msg := store.BusMessage{Kind: store.BusTaskAnswer, ID: "ask", Data: json.RawMessage(`"dave"`)}
		took, left, err := s.PostTaskAnswers(ctx, "dave", "ask", map[string]json.RawMessage{
			"name-1": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`),
			"never":  json.RawMessage(`{}`),
		}, msg)
		if err != nil || took != 1 || left != 1 {
			t.Fatalf("partial answer: took %d left %d (%v); want 1, 1", took, left, err)
		}
		if got := recv(t, msgs); got.Kind != store.BusTaskAnswer || got.ID != "ask" {
			t.Fatalf("bus message %+v", got)
		}
		got := loadTask(t, s, "dave", "ask")
		if string(got.Answers["name-1"]) != `{"action":"accept","content":{"name":"Ada"}}` || len(got.Answers) != 1 {
			t.Fatalf("held answers %v", got.Answers)
		}
		if out := got.Outstanding(); len(out) != 1 || out["confirm-1"] == nil {
			t.Fatalf("outstanding %v, want confirm-1 alone", out)
		}
		// An answer to a key already answered is ignored, and publishes nothing.
		if took, left, err := s.PostTaskAnswers(ctx, "dave", "ask", map[string]json.RawMessage{"name-1": json.RawMessage(`{}`)}, msg); err != nil || took != 0 || left != 1 {
			t.Fatalf("a second answer to name-1: took %d left %d (%v)", took, left, err)
		}
		if took, left, err := s.PostTaskAnswers(ctx, "dave", "ask", map[string]json.RawMessage{"confirm-1": json.RawMessage(`{"action":"accept"}`)}, msg); err != nil || took != 1 || left != 0 {
			t.Fatalf("the last answer: took %d left %d (%v)", took, left, err)
		}
		recv(t, msgs)
		got = loadTask(t, s, "dave", "ask")
		if len(got.Answers) != 2 || len(got.Outstanding()) != 0 {
			t.Fatalf("a complete round: answers %v outstanding %v", got.Answers, got.Outstanding())
		}
		// The runner takes them and moves on: a new round drops them.
		got.Status, got.Round, got.InputRequests = store.TaskInputRequired, 2, map[string]json.RawMessage{"more-2": json.RawMessage(`{}`)}
		if ok, _ := s.UpdateTask(ctx, got); !ok {
			t.Fatal("round 2 refused")
		}
		got = loadTask(t, s, "dave", "ask")
		if len(got.Answers) != 0 || len(got.Outstanding()) != 1 {
			t.Fatalf("round 2: answers %v outstanding %v", got.Answers, got.Outstanding())
		}
		if _, _, err := s.PostTaskAnswers(ctx, "dave", "absent", nil, msg); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("answers to an absent task: %v, want ErrNotFound", err)
		}
	})
}

func TestTasks_CancelIsMarkedAndAnnounced(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		mustCreateTask(t, s, sampleTask("erin", "stop", "inst-a"), 5)
		msgs, _ := collect(t, s)
		msg := store.BusMessage{Kind: store.BusTaskCancel, ID: "stop", Data: json.RawMessage(`"erin"`)}
		if err := s.RequestTaskCancel(ctx, "erin", "stop", msg); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, msgs); got.Kind != store.BusTaskCancel || got.ID != "stop" {
			t.Fatalf("bus message %+v", got)
		}
		if !loadTask(t, s, "erin", "stop").CancelRequested {
			t.Fatal("the cancel was not marked")
		}
		if err := s.RequestTaskCancel(ctx, "erin", "absent", msg); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cancelling an absent task: %v, want ErrNotFound", err)
		}
	})
}

func TestTasks_ASettledTaskExpiresAfterItsTTL(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		mustCreateTask(t, s, sampleTask("frank", "done", "inst-a"), 5)
		got := loadTask(t, s, "frank", "done")
		got.Status, got.TTL = store.TaskCompleted, 300*time.Millisecond
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settle: %v, %v", ok, err)
		}
		loadTask(t, s, "frank", "done") // still there within its TTL
		waitTTL(t, s, 300*time.Millisecond)
		if _, err := s.LoadTask(ctx, "frank", "done"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after its TTL: %v, want ErrNotFound", err)
		}
	})
}

func TestTasks_RefusesBadInput(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		long := string(make([]byte, 201))
		settled := sampleTask("o", "x", "r")
		settled.Status, settled.TTL = store.TaskCompleted, 0
		for name, try := range map[string]func() error{
			"empty owner": func() error { return s.CreateTask(ctx, sampleTask("", "x", "r"), running(1), time.Minute, time.Hour) },
			"long id":     func() error { return s.CreateTask(ctx, sampleTask("o", long, "r"), running(1), time.Minute, time.Hour) },
			"no runner":   func() error { return s.CreateTask(ctx, sampleTask("o", "x", ""), running(1), time.Minute, time.Hour) },
			"zero lease":  func() error { return s.CreateTask(ctx, sampleTask("o", "x", "r"), running(1), 0, time.Hour) },
			"zero ttl":    func() error { _, err := s.UpdateTask(ctx, settled); return err },
			"many inputs": func() error { return s.CreateTask(ctx, manyInputs(), running(1), time.Minute, time.Hour) },
		} {
			if err := try(); err == nil || errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v, want refused", name, err)
			}
		}
	})
}

func manyInputs() *store.Task {
	t := sampleTask("o", "x", "r")
	t.InputRequests = map[string]json.RawMessage{}
	for i := range store.MaxTaskInputs + 1 {
		t.InputRequests[fmt.Sprint("k", i)] = json.RawMessage(`{}`)
	}
	return t
}

// A placeholder runner's lease is taken over by exactly one of the
// instances that try (Lambda may deliver a run event twice), lapsed or
// not; a settled task's is never.
func TestTasks_APlaceholderLeaseIsTakenOverOnce(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		task := sampleTask("dave", "handoff", "launch:inst-a")
		task.Run = []byte("sealed run spec")
		if err := s.CreateTask(ctx, task, running(4), 100*time.Millisecond, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond) // the placeholder lapses: it may still be taken
		var wg sync.WaitGroup
		var mu sync.Mutex
		var took []string
		for _, inst := range []string{"inst-b", "inst-c", "inst-d"} {
			wg.Go(func() {
				ok, err := s.TakeTaskLease(ctx, "dave", "handoff", "launch:inst-a", inst, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					took = append(took, inst)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(took) != 1 {
			t.Fatalf("%d instances took the lease: %v", len(took), took)
		}
		got := loadTask(t, s, "dave", "handoff")
		if got.Runner != took[0] || got.LeaseLapsed || string(got.Run) != "sealed run spec" {
			t.Fatalf("after the take-over: runner %q lapsed %v run %q", got.Runner, got.LeaseLapsed, got.Run)
		}
		if ok, err := s.RenewTaskLease(ctx, "dave", "handoff", took[0], time.Minute); err != nil || !ok {
			t.Fatalf("the new runner's renewal: %v, %v", ok, err)
		}
		got.Status = store.TaskCompleted
		if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
			t.Fatalf("settling: %v, %v", ok, err)
		}
		if ok, err := s.TakeTaskLease(ctx, "dave", "handoff", took[0], "inst-e", time.Minute); err != nil || ok {
			t.Fatalf("a settled task's lease was taken: %v, %v", ok, err)
		}
		if ok, err := s.TakeTaskLease(ctx, "dave", "nosuch", "launch:inst-a", "inst-e", time.Minute); err != nil || ok {
			t.Fatalf("a missing task's lease was taken: %v, %v", ok, err)
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
			return s.CreateTask(ctx, sampleTask(owner, id, "inst-a"), limits, time.Minute, time.Hour)
		}
		settle := func(id, status string, result []byte) (int64, error) {
			t.Helper()
			got := loadTask(t, s, "gina", id)
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
		if got := loadTask(t, s, "gina", "t2"); got.Version != 1 || got.Status != store.TaskWorking || got.Runner == "" {
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
