package taskrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/store"
)

// countingStore is a real store that counts the tasks created in it.
type countingStore struct {
	*store.Redis
	created atomic.Int32
}

func (s *countingStore) CreateTask(ctx context.Context, t *store.Task, limits store.TaskLimits, leaseTTL, life time.Duration) error {
	s.created.Add(1)
	return s.Redis.CreateTask(ctx, t, limits, leaseTTL, life)
}

var askName = map[string]json.RawMessage{"name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?"}}`)}

// A first step that answers creates no task: StartOnInput returns its
// outcome and nothing is written; one that asks creates the task with
// its first round open, under keys of the round, and the run goes on
// from there on the same step, which gets the answers under its own keys
// without being asked to start again.
func TestStartOnInputStoresOnlyACallThatAsks(t *testing.T) {
	cs := &countingStore{Redis: redisStore(t)}
	a := instance(t, cs, time.Second)
	b := instance(t, cs.Redis, time.Second)

	task, out, err := a.StartOnInput(t.Context(), spec, func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[]}`)}, nil
	})
	if err != nil || task != nil || string(out.Result) != `{"content":[]}` {
		t.Fatalf("a step that answers: %+v %s %v, want its result and no task", task, out.Result, err)
	}
	if n := cs.created.Load(); n != 0 {
		t.Fatalf("%d tasks created for a step that asked nothing", n)
	}

	var steps atomic.Int32
	got := make(chan map[string]json.RawMessage, 1)
	task, _, err = a.StartOnInput(t.Context(), spec, func(_ context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		if steps.Add(1) == 1 {
			if answers != nil {
				t.Errorf("the first step got answers %v", answers)
			}
			return taskrun.Outcome{InputRequests: askName}, nil
		}
		got <- answers
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[],"said":"hi"}`)}, nil
	})
	if err != nil || task == nil {
		t.Fatalf("a step that asks: %+v %v, want a task", task, err)
	}
	if n := cs.created.Load(); n != 1 {
		t.Fatalf("%d tasks created, want 1", n)
	}
	if task.Status != store.TaskInputRequired || task.Round != 1 || len(task.InputRequests) != 1 || task.InputRequests["r1-name"] == nil {
		t.Fatalf("the created task %+v, want round 1 asking r1-name", task)
	}
	stored, err := b.Get(t.Context(), spec.Owner, task.ID)
	if err != nil || stored.Status != store.TaskInputRequired || stored.Outstanding()["r1-name"] == nil {
		t.Fatalf("the task as the other instance sees it: %+v %v", stored, err)
	}
	done, err := b.Answer(t.Context(), spec.Owner, task.ID, 1, map[string]json.RawMessage{"r1-name": json.RawMessage(`{"action":"accept"}`)})
	if err != nil || done.Status != store.TaskCompleted || string(done.Result) != `{"content":[],"said":"hi"}` {
		t.Fatalf("answered: %+v %v, want completed with the step's result", done, err)
	}
	if answers := <-got; string(answers["name"]) != `{"action":"accept"}` || len(answers) != 1 {
		t.Fatalf("the step got %v, want the answer under its own key", answers)
	}
	if n := steps.Load(); n != 2 {
		t.Fatalf("the step ran %d times, want 2 (asked once, answered once)", n)
	}
}

// The caller leaving during the first step cancels it: nothing is stored
// and the step's context ended with the caller's cause.
func TestStartOnInputEndsWithItsCaller(t *testing.T) {
	cs := &countingStore{Redis: redisStore(t)}
	a := instance(t, cs, time.Second)
	ctx, cancel := context.WithCancelCause(t.Context())
	left := errors.New("the client left")
	_, _, err := a.StartOnInput(ctx, spec, func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
		cancel(left)
		<-ctx.Done()
		return taskrun.Outcome{}, context.Cause(ctx)
	})
	if !errors.Is(err, left) {
		t.Fatalf("err %v, want the caller's cause", err)
	}
	if n := cs.created.Load(); n != 0 {
		t.Fatalf("%d tasks created", n)
	}
}

// Past the owner's bound the task is not created (ErrLimit) and the run's
// context ends, so the call that asked is cancelled.
func TestStartOnInputWithinTheOwnersBound(t *testing.T) {
	a := instance(t, redisStore(t), time.Second) // PerPrincipal 2
	ended := make(chan error, 3)
	start := func() (*store.Task, error) {
		task, _, err := a.StartOnInput(t.Context(), spec, func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
			if answers == nil {
				context.AfterFunc(ctx, func() { ended <- context.Cause(ctx) })
				return taskrun.Outcome{InputRequests: askName}, nil
			}
			return taskrun.Outcome{Result: json.RawMessage(`{}`)}, nil
		})
		return task, err
	}
	for range 2 {
		if _, err := start(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := start(); !errors.Is(err, taskrun.ErrLimit) {
		t.Fatalf("the third: %v, want ErrLimit", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the refused call's context did not end")
	}
}

// With AnswerWithin, a round nobody answers ends the run: the step's
// context ends (the backend call is cancelled) and the task fails with
// the Unanswered message.
func TestARoundUnansweredInTimeEndsTheRun(t *testing.T) {
	a := instance(t, redisStore(t), time.Second)
	s := spec
	s.AnswerWithin = 300 * time.Millisecond
	s.Unanswered = errors.New("no answer within 300ms (some.setting)")
	ended := make(chan error, 1)
	start := time.Now()
	task, _, err := a.StartOnInput(t.Context(), s, func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		context.AfterFunc(ctx, func() { ended <- context.Cause(ctx) })
		return taskrun.Outcome{InputRequests: askName}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-ended:
		if cause != s.Unanswered {
			t.Fatalf("the step's context ended with %v", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the unanswered run's step was not cancelled")
	}
	if d := time.Since(start); d < s.AnswerWithin {
		t.Fatalf("cancelled after %v, before AnswerWithin", d)
	}
	got := await(t, a, task.ID, status(store.TaskFailed))
	if !strings.Contains(got.StatusMessage, "some.setting") {
		t.Fatalf("failed with %q, want the Unanswered message", got.StatusMessage)
	}
}
