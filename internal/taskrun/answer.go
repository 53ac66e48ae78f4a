package taskrun

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/gateway/store"
)

// The answering side of a task whose client answers synchronously (a
// parked call's retry, in the router): rather than posting answers
// (Update) and polling (Get) as a client of tasks does, the request that
// brings a round's answers waits, on whichever instance it reached, for
// what the task does next: its next round, or its end. The run's writes
// are announced on the bus (store.BusTaskStatus), which wakes the wait;
// a poll at a third of the lease covers a lost message and settles a
// task whose run's lease lapsed (Get), so a wait on a task whose
// instance died ends within the lease instead of hanging.

// Answer posts a client's answers to round of task id (answers to keys
// not outstanding in it are ignored) and waits for what the task does
// next. It returns the task as it then stands:
//
//   - settled, or at a round after round: what followed the round's
//     answers (this retry's or an earlier one's);
//   - at round with requests still outstanding: the round is only partly
//     answered, and Outstanding says what remains (nothing is waited for:
//     a retry without answers gets the round back at once);
//   - at a round before round: as it is, at once.
//
// ErrUnknown when absent; the wait ends with ctx (its cause).
func (r *Runner) Answer(ctx context.Context, owner, id string, round int, answers map[string]json.RawMessage) (*store.Task, error) {
	wake, stop := r.waiters.add(owner, id) // before the post: no status change is missed
	defer stop()
	t, err := r.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if t.Round == round && t.Status == store.TaskInputRequired {
		outstanding, post := t.Outstanding(), map[string]json.RawMessage{}
		for k, a := range answers {
			if _, ok := outstanding[k]; ok {
				post[k] = a
			}
		}
		if len(post) > 0 {
			_, _, err := r.opts.Store.PostTaskAnswers(ctx, owner, id, post, busMessage(store.BusTaskAnswer, owner, id))
			if errors.Is(err, store.ErrNotFound) {
				return nil, ErrUnknown
			}
			if err != nil {
				return nil, err
			}
			if t, err = r.Get(ctx, owner, id); err != nil {
				return nil, err
			}
		}
	}
	poll := time.NewTicker(r.opts.Lease / 3)
	defer poll.Stop()
	for {
		switch {
		case store.TaskTerminal(t.Status), t.Round != round:
			return t, nil
		case t.Status == store.TaskInputRequired && len(t.Outstanding()) > 0:
			return t, nil // partly answered
		}
		// The round is answered: the run has its answers, or will.
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-wake:
		case <-poll.C:
		}
		if t, err = r.Get(ctx, owner, id); err != nil {
			return nil, err
		}
	}
}

// statusWaiters are this runner's Answer calls, by owner and task id,
// woken by the bus's status messages.
type statusWaiters struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]bool
}

// add registers a wait for task id's changes; stop unregisters it.
func (w *statusWaiters) add(owner, id string) (wake <-chan struct{}, stop func()) {
	k, ch := runKey(owner, id), make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]map[chan struct{}]bool{}
	}
	if w.m[k] == nil {
		w.m[k] = map[chan struct{}]bool{}
	}
	w.m[k][ch] = true
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m[k], ch)
		if len(w.m[k]) == 0 {
			delete(w.m, k)
		}
	}
}

// changed wakes the waits of task id; it never blocks.
func (w *statusWaiters) changed(owner, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.m[runKey(owner, id)] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
