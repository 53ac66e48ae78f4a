package taskrun_test

// What a caller can make a runner hold: a first round nobody answers ends
// (FirstRoundWithin), finished tasks stay within their budget
// (FinishedBytes), and every end is reported once (Ended).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/store"
)

// twoStores are two handles on one Redis keyspace: two instances.
func twoStores(t *testing.T) (a, b *store.Redis) {
	t.Helper()
	prefix := "taskrun" + fmt.Sprint(time.Now().UnixNano())
	open := func() *store.Redis {
		s, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

func runner(t *testing.T, s store.Store, opts taskrun.Options) *taskrun.Runner {
	t.Helper()
	opts.Store, opts.PollInterval = s, 100*time.Millisecond
	if opts.Lease == 0 {
		opts.Lease = time.Second
	}
	r, err := taskrun.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// asking is a step that asks one question per round, rounds times, then
// answers; stopped receives why its context ended, if it did.
func asking(rounds int, stopped chan<- error) taskrun.Step {
	return func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		if n := len(answers); answers == nil || n < rounds {
			select {
			case <-ctx.Done(): // the next round is asked only while the run goes on
				stopped <- context.Cause(ctx)
				return taskrun.Outcome{}, ctx.Err()
			default:
			}
			q := map[string]json.RawMessage{"q": json.RawMessage(`{"method":"elicitation/create","params":{"message":"go on?"}}`)}
			return taskrun.Outcome{InputRequests: q}, nil
		}
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[]}`)}, nil
	}
}

// A task whose first round is bounded (input_before_task: its client may
// never have learnt its id) fails once the round goes unanswered that
// long, naming the bound, and frees its place under the owner's bound; an
// unbounded task's rounds wait on.
func TestAnUnansweredFirstRoundEndsAndFreesItsPlace(t *testing.T) {
	r := runner(t, redisStore(t), taskrun.Options{PerPrincipal: 1, FirstRoundWithin: 400 * time.Millisecond})
	bounded := spec
	bounded.FirstRoundBounded = true
	stopped := make(chan error, 4)
	task, err := r.Start(t.Context(), bounded, asking(1, stopped))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(t.Context(), bounded, asking(1, stopped)); !errors.Is(err, taskrun.ErrLimit) {
		t.Fatalf("a second task over a bound of 1: %v, want ErrLimit", err)
	}
	got := await(t, r, task.ID, status(store.TaskFailed))
	if !strings.Contains(got.StatusMessage, "first question") || !strings.Contains(got.StatusMessage, "streams.client_request_timeout") {
		t.Fatalf("the unanswered task: %q, want it to name the client's wait", got.StatusMessage)
	}
	// Its place is free: a task whose first round is answered in time
	// runs on, and its later rounds are not bounded.
	next, err := r.Start(t.Context(), bounded, asking(2, stopped))
	if err != nil {
		t.Fatalf("after the unanswered task ended: %v", err)
	}
	await(t, r, next.ID, func(t *store.Task) bool { return t.Round == 1 && t.Status == store.TaskInputRequired })
	if err := r.Update(t.Context(), spec.Owner, next.ID, map[string]json.RawMessage{"r1-q": json.RawMessage(`{"action":"accept"}`)}); err != nil {
		t.Fatal(err)
	}
	await(t, r, next.ID, func(t *store.Task) bool { return t.Round == 2 && t.Status == store.TaskInputRequired })
	time.Sleep(1200 * time.Millisecond) // three times the first round's bound: the second waits on
	if got, err := r.Get(t.Context(), spec.Owner, next.ID); err != nil || got.Status != store.TaskInputRequired {
		t.Fatalf("a second round past the first round's bound: %+v, %v", got, err)
	}
}

// A result that would take its owner's finished tasks past their budget
// fails the task, naming the field to raise; once they hold the budget no
// task of the owner starts, while another owner's do.
func TestFinishedTasksStayWithinTheirBudget(t *testing.T) {
	const budget = 64 << 10
	r := runner(t, redisStore(t), taskrun.Options{PerPrincipal: 4, FinishedBytes: budget})
	result := func(n int) taskrun.Step {
		return func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
			text := strings.Repeat("x", n)
			return taskrun.Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"` + text + `"}]}`)}, nil
		}
	}
	first, err := r.Start(t.Context(), spec, result(budget-1500))
	if err != nil {
		t.Fatal(err)
	}
	await(t, r, first.ID, status(store.TaskCompleted))
	second, err := r.Start(t.Context(), spec, result(8<<10))
	if err != nil {
		t.Fatalf("below the budget: %v", err)
	}
	got := await(t, r, second.ID, status(store.TaskFailed))
	if !strings.Contains(got.StatusMessage, "limits.finished_task_bytes_per_principal") || len(got.Result) != 0 {
		t.Fatalf("a result past the budget: %q (result %d bytes)", got.StatusMessage, len(got.Result))
	}
	if _, err := r.Start(t.Context(), spec, result(1)); !errors.Is(err, taskrun.ErrBudget) {
		t.Fatalf("a task at the budget: %v, want ErrBudget", err)
	}
	other := spec
	other.Owner = "another-owner"
	if _, err := r.Start(t.Context(), other, result(1)); err != nil {
		t.Fatalf("another owner's task: %v", err)
	}
}

// Every end is reported once, by whichever instance settled the task:
// completed, failed, cancelled, and lapsed (settled by the instance that
// read it after its runner died).
func TestEachEndIsReportedOnce(t *testing.T) {
	prefixed, dying := twoStores(t)
	var mu sync.Mutex
	ends := map[string][]store.Task{}
	ended := func(t store.Task) {
		mu.Lock()
		defer mu.Unlock()
		ends[t.ID] = append(ends[t.ID], t)
	}
	a := runner(t, prefixed, taskrun.Options{PerPrincipal: 8, Lease: 300 * time.Millisecond, Ended: ended})
	withPrincipal := spec
	withPrincipal.Principal = "alice"
	want := map[string]string{}
	ok, err := a.Start(t.Context(), withPrincipal, func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[]}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want[ok.ID] = store.TaskCompleted
	failing, err := a.Start(t.Context(), withPrincipal, func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
		return taskrun.Outcome{}, &taskrun.RPCError{Code: -32001, Message: strings.Repeat("long ", 1000), Data: json.RawMessage(`"` + strings.Repeat("d", 5000) + `"`)}
	})
	if err != nil {
		t.Fatal(err)
	}
	want[failing.ID] = store.TaskFailed
	hold := func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
		<-ctx.Done()
		return taskrun.Outcome{}, ctx.Err()
	}
	cancelled, err := a.Start(t.Context(), withPrincipal, hold)
	if err != nil {
		t.Fatal(err)
	}
	want[cancelled.ID] = store.TaskCancelled
	if err := a.Cancel(t.Context(), spec.Owner, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	for id, s := range want {
		await(t, a, id, status(s))
	}
	// A second instance whose store handle dies with a task running: the
	// first settles it when it reads it.
	b := runner(t, dying, taskrun.Options{PerPrincipal: 8, Lease: 300 * time.Millisecond, Ended: ended})
	lapsed, err := b.Start(t.Context(), withPrincipal, hold)
	if err != nil {
		t.Fatal(err)
	}
	want[lapsed.ID] = store.TaskFailed
	dying.Close()
	await(t, a, lapsed.ID, status(store.TaskFailed))

	mu.Lock()
	defer mu.Unlock()
	for id, s := range want {
		principal := "alice" // the run's; the store keeps none, so the lapsed task's settler knows none
		if id == lapsed.ID {
			principal = ""
		}
		if got := ends[id]; len(got) != 1 || got[0].Status != s || got[0].Principal != principal || got[0].UpdatedAt.Before(got[0].CreatedAt) {
			t.Fatalf("task %s (%s) reported %d times: %+v", id, s, len(got), got)
		}
	}
	f := ends[failing.ID][0]
	if len(f.StatusMessage) > 1100 || len(f.Error) > 1300 || !strings.Contains(string(f.Error), "-32001") {
		t.Fatalf("a failure keeps %d bytes of message and %d of error: want both clipped, the code kept", len(f.StatusMessage), len(f.Error))
	}
	if len(ends) != len(want) {
		t.Fatalf("%d tasks reported, want %d", len(ends), len(want))
	}
}
