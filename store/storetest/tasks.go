package storetest

// The contract of the store's tasks, as every backend must keep it.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

func tasksCompareAndSetLetsOneInstanceSettle(t *testing.T, s store.Store) {
	ctx := context.Background()
	MustCreateTask(t, s, SampleTask("alice", "cas", "inst-a"), 5)
	// Two instances read version 1 and settle concurrently: one wins.
	var wg sync.WaitGroup
	wins := make(chan string, 2)
	readers := []*store.Task{LoadTask(t, s, "alice", "cas"), LoadTask(t, s, "alice", "cas")}
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
	got := LoadTask(t, s, "alice", "cas")
	if got.Status != won[0] || got.Version != 2 || got.Runner != "" {
		t.Fatalf("after the race: status %s version %d runner %q; want %s, 2, none", got.Status, got.Version, got.Runner, won[0])
	}
	stale := SampleTask("alice", "cas", "")
	stale.Version = 1
	if ok, err := s.UpdateTask(ctx, stale); err != nil || ok {
		t.Fatalf("a stale version: %v, %v; want refused", ok, err)
	}
	if _, err := s.UpdateTask(ctx, SampleTask("alice", "absent", "")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an absent task: %v, want ErrNotFound", err)
	}
}

func tasksALapsedLeaseIsSeenAndFreesItsPlace(t *testing.T, s store.Store) {
	ctx := context.Background()
	task := SampleTask("carol", "lapse", "inst-a")
	if err := s.CreateTask(ctx, task, Running(1), 200*time.Millisecond, time.Hour); err != nil {
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
		got = LoadTask(t, s, "carol", "lapse")
		return got.LeaseLapsed
	}) {
		t.Fatal("the lease never lapsed")
	}
	if ok, _ := s.RenewTaskLease(ctx, "carol", "lapse", "inst-a", time.Minute); ok {
		t.Fatal("a lapsed lease was renewed: the runner must stop")
	}
	MustCreateTask(t, s, SampleTask("carol", "next", "inst-b"), 1) // the lapsed one no longer counts
	// Whoever reads it settles it failed, once.
	got.Status, got.StatusMessage = store.TaskFailed, "the instance running the task stopped (its lease lapsed)"
	got.Error = json.RawMessage(`{"code":-32603,"message":"task runner lost"}`)
	if ok, err := s.UpdateTask(ctx, got); err != nil || !ok {
		t.Fatalf("settling the lapsed task: %v, %v", ok, err)
	}
	if got = LoadTask(t, s, "carol", "lapse"); got.LeaseLapsed || got.Status != store.TaskFailed {
		t.Fatalf("after settling: %+v", got)
	}
}

func tasksAnswersAreHeldUntilTheRoundIsComplete(t *testing.T, s store.Store) {
	ctx := context.Background()
	MustCreateTask(t, s, SampleTask("dave", "ask", "inst-a"), 5)
	task := LoadTask(t, s, "dave", "ask")
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
	if got := Recv(t, msgs); got.Kind != store.BusTaskAnswer || got.ID != "ask" {
		t.Fatalf("bus message %+v", got)
	}
	got := LoadTask(t, s, "dave", "ask")
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
	Recv(t, msgs)
	got = LoadTask(t, s, "dave", "ask")
	if len(got.Answers) != 2 || len(got.Outstanding()) != 0 {
		t.Fatalf("a complete round: answers %v outstanding %v", got.Answers, got.Outstanding())
	}
	// The runner takes them and moves on: a new round drops them.
	got.Status, got.Round, got.InputRequests = store.TaskInputRequired, 2, map[string]json.RawMessage{"more-2": json.RawMessage(`{}`)}
	if ok, _ := s.UpdateTask(ctx, got); !ok {
		t.Fatal("round 2 refused")
	}
	got = LoadTask(t, s, "dave", "ask")
	if len(got.Answers) != 0 || len(got.Outstanding()) != 1 {
		t.Fatalf("round 2: answers %v outstanding %v", got.Answers, got.Outstanding())
	}
	if _, _, err := s.PostTaskAnswers(ctx, "dave", "absent", nil, msg); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("answers to an absent task: %v, want ErrNotFound", err)
	}
}

func tasksCancelIsMarkedAndAnnounced(t *testing.T, s store.Store) {
	ctx := context.Background()
	MustCreateTask(t, s, SampleTask("erin", "stop", "inst-a"), 5)
	msgs, _ := collect(t, s)
	msg := store.BusMessage{Kind: store.BusTaskCancel, ID: "stop", Data: json.RawMessage(`"erin"`)}
	if err := s.RequestTaskCancel(ctx, "erin", "stop", msg); err != nil {
		t.Fatal(err)
	}
	if got := Recv(t, msgs); got.Kind != store.BusTaskCancel || got.ID != "stop" {
		t.Fatalf("bus message %+v", got)
	}
	if !LoadTask(t, s, "erin", "stop").CancelRequested {
		t.Fatal("the cancel was not marked")
	}
	if err := s.RequestTaskCancel(ctx, "erin", "absent", msg); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancelling an absent task: %v, want ErrNotFound", err)
	}
}

func tasksRefusesBadInput(t *testing.T, s store.Store) {
	ctx := context.Background()
	long := string(make([]byte, 201))
	settled := SampleTask("o", "x", "r")
	settled.Status, settled.TTL = store.TaskCompleted, 0
	for name, try := range map[string]func() error{
		"empty owner": func() error { return s.CreateTask(ctx, SampleTask("", "x", "r"), Running(1), time.Minute, time.Hour) },
		"long id":     func() error { return s.CreateTask(ctx, SampleTask("o", long, "r"), Running(1), time.Minute, time.Hour) },
		"no runner":   func() error { return s.CreateTask(ctx, SampleTask("o", "x", ""), Running(1), time.Minute, time.Hour) },
		"zero lease":  func() error { return s.CreateTask(ctx, SampleTask("o", "x", "r"), Running(1), 0, time.Hour) },
		"zero ttl":    func() error { _, err := s.UpdateTask(ctx, settled); return err },
		"many inputs": func() error { return s.CreateTask(ctx, manyInputs(), Running(1), time.Minute, time.Hour) },
	} {
		if err := try(); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}

// A placeholder runner's lease is taken over by exactly one of the
// instances that try (Lambda may deliver a run event twice), lapsed or
// not; a settled task's is never.
func tasksAPlaceholderLeaseIsTakenOverOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	task := SampleTask("dave", "handoff", "launch:inst-a")
	task.Run = []byte("sealed run spec")
	if err := s.CreateTask(ctx, task, Running(4), 100*time.Millisecond, time.Hour); err != nil {
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
	got := LoadTask(t, s, "dave", "handoff")
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
}
