package taskrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpgw/gateway/store"
)

// An input round on the runner's side: the keys the client sees are the
// step's own prefixed by the round, so they stay unique over the task's
// life (a late answer to an earlier round's question cannot be taken for
// a later one's), and the run maps them back before it steps again. A
// round is opened either by the run (round) or, for a task created only
// when its call first asked (StartOnInput), with the task itself.

// ErrUnanswered is why a run with Spec.AnswerWithin ends when a round
// goes unanswered that long, unless Spec.Unanswered says otherwise.
var ErrUnanswered = errors.New("the client did not answer in time")

// issue keys a round's requests for the client: the issued keys, mapped
// to the step's, and the requests under the issued keys.
func issue(round int, requests map[string]json.RawMessage) (issued map[string]string, asked map[string]json.RawMessage) {
	issued, asked = make(map[string]string, len(requests)), make(map[string]json.RawMessage, len(requests))
	for k, req := range requests {
		key := fmt.Sprintf("r%d-%s", round, k)
		issued[key] = k
		asked[key] = req
	}
	return issued, asked
}

// round opens an input round for the backend's requests and waits until
// every one is answered; it returns the answers under the backend's keys,
// or nil when the run ended meanwhile.
func (r *Runner) round(ctx context.Context, rn *run, t *store.Task, requests map[string]json.RawMessage) map[string]json.RawMessage {
	round := t.Round + 1
	issued, asked := issue(round, requests)
	t.InputRequests = asked
	t.Round, t.Status, t.StatusMessage = round, store.TaskInputRequired, waitingMessage
	if r.write(rn, t) != nil {
		return nil
	}
	return r.await(ctx, rn, t, issued)
}

// waitingMessage is the statusMessage of a task waiting for its client.
const waitingMessage = "waiting for the client's input"

// await waits until every request of t's open round (issued: its keys,
// mapped to the step's) is answered, and returns the answers under the
// step's keys, or nil when the run ended meanwhile (with the run's
// AnswerWithin: also when the round went unanswered that long).
func (r *Runner) await(ctx context.Context, rn *run, t *store.Task, issued map[string]string) map[string]json.RawMessage {
	round := t.Round
	poll := time.NewTicker(r.opts.Lease / 3)
	defer poll.Stop()
	within, why := answerWithin(rn, t)
	var deadline <-chan time.Time
	if within > 0 {
		d := time.NewTimer(within)
		defer d.Stop()
		deadline = d.C
	}
	for {
		cur, err := r.opts.Store.LoadTask(ctx, t.Owner, t.ID)
		switch {
		case err != nil && ctx.Err() == nil:
			r.logger.Warn("task: reading its answers", "task", t.ID, "err", err)
		case err == nil && cur.CancelRequested:
			rn.cancel(errCancelled)
		case err == nil && cur.Round == round && len(cur.Answers) > 0 && len(cur.Outstanding()) == 0:
			answers := map[string]json.RawMessage{}
			for key, a := range cur.Answers {
				answers[issued[key]] = a
			}
			t.Status, t.StatusMessage, t.InputRequests = store.TaskWorking, "", nil
			if r.write(rn, t) != nil {
				return nil
			}
			return answers
		}
		select {
		case <-ctx.Done():
			return nil
		case <-rn.wake:
		case <-poll.C:
		case <-deadline:
			rn.cancel(why)
			return nil
		}
	}
}

// answerWithin is how long t's open round waits for its answers (0: no
// bound) and why the run ends past it: the run's Spec.AnswerWithin, or
// for a first round the record's FirstRoundWithin, whichever is shorter.
func answerWithin(rn *run, t *store.Task) (time.Duration, error) {
	within, why := rn.answerWithin, rn.unanswered
	if why == nil {
		why = ErrUnanswered
	}
	if first := t.FirstRoundWithin; t.Round == 1 && first > 0 && (within <= 0 || first < within) {
		within = first
		why = fmt.Errorf("the client did not answer the task's first question within %s (streams.client_request_timeout)", first)
	}
	return within, why
}
