package taskrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/store"
)

// A call that asks two questions at once, then a third once they are
// answered, is two rounds of one task; the answers reach the questions
// they answer, posted on the other instance.
func TestConversationRoundsFromACallThatAsks(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	conv := taskrun.Converse(t.Context(), taskrun.CallFunc(func(ctx context.Context, ask taskrun.Ask) (json.RawMessage, error) {
		var wg sync.WaitGroup
		var first, second json.RawMessage
		var err1, err2 error
		wg.Go(func() {
			first, err1 = ask(ctx, json.RawMessage(`{"method":"elicitation/create","params":{"message":"one"}}`))
		})
		wg.Go(func() {
			second, err2 = ask(ctx, json.RawMessage(`{"method":"elicitation/create","params":{"message":"two"}}`))
		})
		wg.Wait()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		third, err := ask(ctx, json.RawMessage(`{"method":"roots/list"}`))
		if err != nil {
			return nil, err
		}
		out, _ := json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]json.RawMessage{
			"one": first, "two": second, "three": third}})
		return out, nil
	}))
	task, err := a.Start(t.Context(), spec, conv.Step)
	if err != nil {
		t.Fatal(err)
	}
	answerAll := func(round *store.Task, answer func(req json.RawMessage) string) {
		t.Helper()
		responses := map[string]json.RawMessage{}
		for key, req := range round.Outstanding() {
			responses[key] = json.RawMessage(answer(req))
		}
		if err := b.Update(t.Context(), spec.Owner, round.ID, responses); err != nil {
			t.Fatal(err)
		}
	}
	r1 := await(t, b, task.ID, func(t *store.Task) bool { return t.Status == store.TaskInputRequired && t.Round == 1 })
	if n := len(r1.Outstanding()); n != 2 {
		t.Fatalf("round 1 asks %d questions, want the two asked at once", n)
	}
	answerAll(r1, func(req json.RawMessage) string {
		var q struct{ Params struct{ Message string } }
		_ = json.Unmarshal(req, &q)
		return `{"action":"accept","content":{"said":"` + q.Params.Message + `"}}`
	})
	r2 := await(t, b, task.ID, func(t *store.Task) bool { return t.Status == store.TaskInputRequired && t.Round == 2 })
	if n := len(r2.Outstanding()); n != 1 {
		t.Fatalf("round 2 asks %d questions, want 1", n)
	}
	answerAll(r2, func(json.RawMessage) string { return `{"roots":[]}` })
	done := await(t, b, task.ID, status(store.TaskCompleted))
	var res struct{ StructuredContent map[string]json.RawMessage }
	if err := json.Unmarshal(done.Result, &res); err != nil {
		t.Fatal(err)
	}
	if string(res.StructuredContent["one"]) != `{"action":"accept","content":{"said":"one"}}` ||
		string(res.StructuredContent["two"]) != `{"action":"accept","content":{"said":"two"}}` ||
		string(res.StructuredContent["three"]) != `{"roots":[]}` {
		t.Fatalf("each question got another's answer: %s", done.Result)
	}
}

// Cancelling a task that waits for an answer ends the call (its question
// fails) and settles the task cancelled; the call's goroutine is gone
// (TestMain checks for leaks).
func TestConversationCancelledWhileAsking(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	asked := make(chan struct{})
	ended := make(chan error, 1)
	conv := taskrun.Converse(t.Context(), taskrun.CallFunc(func(ctx context.Context, ask taskrun.Ask) (json.RawMessage, error) {
		close(asked)
		_, err := ask(ctx, json.RawMessage(`{"method":"elicitation/create","params":{}}`))
		ended <- err
		return nil, err
	}))
	task, err := a.Start(t.Context(), spec, conv.Step)
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	await(t, b, task.ID, status(store.TaskInputRequired))
	if err := b.Cancel(t.Context(), spec.Owner, task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the question was answered, not ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call never saw the cancel")
	}
	await(t, b, task.ID, status(store.TaskCancelled))
}

// A call that fails with a protocol error fails its task with that error;
// Changed reports each status the run wrote.
func TestConversationProtocolErrorAndChanged(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	conv := taskrun.Converse(t.Context(), taskrun.CallFunc(func(context.Context, taskrun.Ask) (json.RawMessage, error) {
		return nil, &taskrun.RPCError{Code: -32602, Message: "bad seconds"}
	}))
	changed := make(chan store.Task, 4)
	s := spec
	s.Changed = func(t store.Task) { changed <- t }
	task, err := a.Start(t.Context(), s, conv.Step)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-changed:
		if c.Status != store.TaskFailed || c.ID != task.ID {
			t.Fatalf("Changed got %s %s", c.ID, c.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Changed was never called")
	}
	got := await(t, b, task.ID, status(store.TaskFailed))
	if string(got.Error) != `{"code":-32602,"message":"bad seconds"}` {
		t.Fatalf("error %s", got.Error)
	}
}

// countedAnswer is an answer that counts how often it is made into what a
// task keeps.
type countedAnswer struct {
	said  string
	kepts *atomic.Int32
}

func (a countedAnswer) Result() (json.RawMessage, error) {
	a.kepts.Add(1)
	return json.Marshal(map[string]string{"said": a.said})
}

type countedCall struct{ kepts *atomic.Int32 }

func (c countedCall) Run(ctx context.Context, ask taskrun.Ask) (taskrun.Answer, error) {
	if ask == nil {
		return nil, errors.New("no ask")
	}
	name := ""
	if ctx.Value(askKey{}) != nil {
		raw, err := ask(ctx, json.RawMessage(`{"method":"elicitation/create"}`))
		if err != nil {
			return nil, err
		}
		name = string(raw)
	}
	return countedAnswer{said: name, kepts: c.kepts}, nil
}

type askKey struct{}

// A conversation's answer reaches a caller answered by the first step as
// the call made it, never made into a task's result; a task that holds
// the answer keeps Answer.Result, made once.
func TestConversationAnswerIsKeptOnlyByATask(t *testing.T) {
	a := instance(t, redisStore(t), time.Second)
	var kepts atomic.Int32
	conv := taskrun.Converse(t.Context(), countedCall{kepts: &kepts})
	task, out, err := a.StartOnInput(t.Context(), spec, conv.Step)
	if answer, ok := out.Answer.(countedAnswer); err != nil || task != nil || !ok || answer.said != "" {
		t.Fatalf("answered at once: %+v %+v %v", task, out, err)
	}
	if n := kepts.Load(); n != 0 {
		t.Fatalf("the answer was made a result %d times with no task to keep it", n)
	}

	conv = taskrun.Converse(context.WithValue(t.Context(), askKey{}, true), countedCall{kepts: &kepts})
	task, _, err = a.StartOnInput(t.Context(), spec, conv.Step)
	if err != nil || task == nil {
		t.Fatalf("a call that asks: %+v %v", task, err)
	}
	var key string
	for k := range task.InputRequests {
		key = k
	}
	done, err := a.Answer(t.Context(), spec.Owner, task.ID, 1, map[string]json.RawMessage{key: json.RawMessage(`"ada"`)})
	if err != nil || done.Status != store.TaskCompleted || string(done.Result) != `{"said":"\"ada\""}` || kepts.Load() != 1 {
		t.Fatalf("kept: %+v %v (made %d times)", done, err, kepts.Load())
	}
}
