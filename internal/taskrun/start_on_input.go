package taskrun

import (
	"context"
	"errors"

	"github.com/mcpgw/gateway/store"
)

// The owner's side of a task that exists only once its call asks: most
// calls never ask their client anything, and a caller that answers them
// synchronously (a 2026-07-28 call parked on a 2025-era backend, in the
// router) should pay no store write for those. StartOnInput runs the
// first step where the caller waits; only when it asks is the task
// created, its first round already open, and the run goes on detached
// from there as Start's would, on the same step and context, so a call
// already under way keeps running (nothing is asked twice).

// StartOnInput runs step's first call on the caller's goroutine and
// creates a task for spec only if it asks for input.
//
// When the first step ends with a result or an error, nothing is stored
// and StartOnInput returns them (a nil task). When it asks, the task is
// created (within the owner's bound: ErrLimit, the run cancelled) with
// the questions as its first round, and its run goes on detached until
// the task ends, exactly as Start's; StartOnInput returns the task as
// created, its InputRequests under the keys the client answers.
//
// The first step runs under the run's own context, which ctx's end
// cancels (with ctx's cause) until the task is created: a caller that
// stops waiting ends the call. Spec.Changed is not called for the
// creation, only for the run's later writes.
func (r *Runner) StartOnInput(ctx context.Context, spec Spec, step Step) (*store.Task, Outcome, error) {
	t, err := r.newTask(spec, r.opts.Store.InstanceID())
	if err != nil {
		return nil, Outcome{}, err
	}
	runCtx, cancel := context.WithCancelCause(context.Background())
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cancel(ErrClosed)
		return nil, Outcome{}, ErrClosed
	}
	r.wg.Add(1) // Close waits for the first step too
	r.mu.Unlock()
	rn := r.register(t, cancel, spec)
	detached := false
	defer func() {
		if !detached {
			r.unregister(t, cancel)
			r.wg.Done()
		}
	}()

	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	out, err := step(runCtx, nil)
	stop()
	switch {
	case err != nil || len(out.InputRequests) == 0:
		return nil, out, err
	case runCtx.Err() != nil:
		return nil, Outcome{}, context.Cause(runCtx)
	case len(out.InputRequests) > store.MaxTaskInputs:
		rpc := tooManyInputs(len(out.InputRequests))
		cancel(rpc)
		return nil, Outcome{}, rpc
	}
	issued, asked := issue(1, out.InputRequests)
	t.Round, t.Status, t.StatusMessage, t.InputRequests = 1, store.TaskInputRequired, waitingMessage, asked
	if err := r.store(ctx, t, spec, r.opts.Lease); err != nil {
		cancel(errNotCreated)
		return nil, Outcome{}, err
	}
	created := *t
	detached = true
	go func() {
		defer r.wg.Done()
		defer r.unregister(t, cancel)
		r.drive(runCtx, rn, t, step, issued)
	}()
	return &created, Outcome{}, nil
}

// errNotCreated is why a first step's call is cancelled when its task
// could not be created (the bound, the store).
var errNotCreated = errors.New("taskrun: the task could not be created")
