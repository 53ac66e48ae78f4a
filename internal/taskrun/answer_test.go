package taskrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/store"
)

// Answer from another instance: a retry without answers gets the round
// back at once; a partial answer is held and the rest is still asked; the
// last answer waits for the next round; the same retry repeated gets that
// round again without waiting; the last round's answer waits for the end.
func TestAnswerPartialRoundsAndTheNextOutcome(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	two := map[string]json.RawMessage{
		"x": json.RawMessage(`{"method":"elicitation/create","params":{"message":"x?"}}`),
		"y": json.RawMessage(`{"method":"roots/list"}`),
	}
	steps := 0
	task, _, err := a.StartOnInput(t.Context(), spec, func(_ context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		steps++
		switch steps {
		case 1:
			return taskrun.Outcome{InputRequests: two}, nil
		case 2:
			if len(answers) != 2 {
				return taskrun.Outcome{}, errors.New("round 1 came incomplete")
			}
			return taskrun.Outcome{InputRequests: askName}, nil
		}
		return taskrun.Outcome{Result: json.RawMessage(`{"done":true}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got, err := b.Answer(ctx, spec.Owner, task.ID, 1, nil)
	if err != nil || got.Round != 1 || len(got.Outstanding()) != 2 {
		t.Fatalf("no answers: %+v %v, want round 1 whole", got, err)
	}
	got, err = b.Answer(ctx, spec.Owner, task.ID, 1, map[string]json.RawMessage{"r1-x": json.RawMessage(`{"action":"accept"}`), "r9-z": json.RawMessage(`{}`)})
	if o := got.Outstanding(); err != nil || got.Round != 1 || len(o) != 1 || o["r1-y"] == nil {
		t.Fatalf("a partial answer: %+v %v, want r1-y alone outstanding", got, err)
	}
	got, err = a.Answer(ctx, spec.Owner, task.ID, 1, map[string]json.RawMessage{"r1-y": json.RawMessage(`{"roots":[]}`)})
	if err != nil || got.Round != 2 || got.Outstanding()["r2-name"] == nil {
		t.Fatalf("the last answer: %+v %v, want round 2", got, err)
	}
	again, err := b.Answer(ctx, spec.Owner, task.ID, 1, map[string]json.RawMessage{"r1-y": json.RawMessage(`{"roots":[]}`)})
	if err != nil || again.Round != 2 || again.Version != got.Version {
		t.Fatalf("round 1 repeated: %+v %v, want round 2 as it was", again, err)
	}
	done, err := b.Answer(ctx, spec.Owner, task.ID, 2, map[string]json.RawMessage{"r2-name": json.RawMessage(`{"action":"accept"}`)})
	if err != nil || done.Status != store.TaskCompleted || string(done.Result) != `{"done":true}` {
		t.Fatalf("the last round: %+v %v, want completed", done, err)
	}
	if _, err := b.Answer(ctx, "another-owner", task.ID, 2, nil); !errors.Is(err, taskrun.ErrUnknown) {
		t.Fatalf("another owner's answer: %v, want ErrUnknown", err)
	}
}

// A wait for the next outcome of a task whose instance died ends within
// its lease: the task is settled failed, naming the lapse.
func TestAnswerOfATaskWhoseInstanceDied(t *testing.T) {
	a, b, sa := twoInstances(t, 300*time.Millisecond)
	task, _, err := a.StartOnInput(t.Context(), spec, func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		if answers == nil {
			return taskrun.Outcome{InputRequests: askName}, nil
		}
		<-ctx.Done()
		return taskrun.Outcome{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Answered, and A dies before going on: its lease is never renewed.
	if got, err := b.Answer(t.Context(), spec.Owner, task.ID, 1, nil); err != nil || got.Round != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	sa.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	got, err := b.Answer(ctx, spec.Owner, task.ID, 1, map[string]json.RawMessage{"r1-name": json.RawMessage(`{}`)})
	if err != nil || got.Status != store.TaskFailed || got.StatusMessage != taskrun.LapsedMessage {
		t.Fatalf("after its instance died: %+v %v, want failed naming the lapse", got, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}
