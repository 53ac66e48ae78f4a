package taskrun

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpgw/gateway/store"
)

// Tasks created for another process to run: where the process that
// creates a task cannot run it (a Lambda invocation ends with its
// response), Create stores it under a placeholder runner, with what its
// run needs (Spec.Run), and the process the task is handed to Adopts it.

// placeholderPrefix marks the runner of a task created for another
// instance to run (Create): its lease may be taken over (Adopt).
const placeholderPrefix = "launch:"

// Create creates a task for spec without running it: its lease is a
// placeholder for lease (the time the instance that runs it has to take
// it over, Adopt), and spec.Run what that instance needs to run it. It
// returns once the task is in the store. ErrLimit past the owner's bound.
func (r *Runner) Create(ctx context.Context, spec Spec, lease time.Duration) (*store.Task, error) {
	if lease <= 0 {
		lease = DefaultPlaceholderLease
	}
	return r.create(ctx, spec, placeholderPrefix+r.opts.Store.InstanceID(), lease)
}

// DefaultPlaceholderLease is Create's default lease: how long a created
// task waits for the instance that runs it before a tasks/get settles it
// failed (NotStartedMessage).
const DefaultPlaceholderLease = time.Minute

// NotStartedMessage is the statusMessage of a task created for another
// instance to run (Create) that no instance took over in time.
const NotStartedMessage = "the task was never started: no gateway instance took it over in time"

// Abandon settles failed, with message, a task Create made that no
// instance has taken over (its run could not be launched); a task taken
// over or settled is left alone.
func (r *Runner) Abandon(ctx context.Context, owner, id, message string) error {
	for range 3 {
		t, err := r.opts.Store.LoadTask(ctx, owner, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUnknown
		}
		if err != nil {
			return err
		}
		if store.TaskTerminal(t.Status) || !strings.HasPrefix(t.Runner, placeholderPrefix) {
			return nil
		}
		setEnd(t, store.TaskFailed, message, nil, &RPCError{Code: -32603, Message: message})
		t.Run = nil
		t.UpdatedAt = time.Now().UTC()
		ok, err := r.opts.Store.UpdateTask(ctx, t)
		if err != nil {
			return err
		}
		if ok {
			r.announce(ctx, t)
			r.finished(t)
			return nil
		}
	}
	return errors.New("taskrun: the task kept changing")
}

// ErrNotAdopted: Adopt left the task alone, because it is settled, runs
// elsewhere, or was taken over by another instance first.
var ErrNotAdopted = errors.New("taskrun: the task is settled or run elsewhere")

// ErrTimeLimit is why a run Adopt drives fails when its context ends: the
// process running it is about to be stopped (a Lambda invocation's time
// limit).
var ErrTimeLimit = errors.New("the task outlived the function's time limit")

// Adopt takes over a task Create made (its placeholder lease, lapsed or
// not) and runs step for it on this instance, until the task ends or ctx
// does: then the task settles failed with ErrTimeLimit's message. load
// gets the task as loaded (its Run, to rebuild the call from) before step
// first runs; an error from it fails the task. Adopt returns when the run
// has ended and its last status is written. A task that is settled, run
// by another instance or taken over first is left alone: ErrNotAdopted,
// so that a run delivered twice runs once. ErrUnknown when absent.
func (r *Runner) Adopt(ctx context.Context, owner, id string, load func(t *store.Task) (Step, error)) error {
	t, err := r.opts.Store.LoadTask(ctx, owner, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ErrUnknown
	case err != nil:
		return err
	case store.TaskTerminal(t.Status) || !strings.HasPrefix(t.Runner, placeholderPrefix):
		return ErrNotAdopted
	}
	me := r.opts.Store.InstanceID()
	ok, err := r.opts.Store.TakeTaskLease(ctx, owner, id, t.Runner, me, r.opts.Lease)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotAdopted
	}
	// Reload: the version the take-over saw (a tasks/update or cancel may
	// have come meanwhile; a lapsed-lease settle cannot, the lease is ours).
	if t, err = r.opts.Store.LoadTask(ctx, owner, id); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { cancel(ErrTimeLimit) })
	defer stop()
	rn := r.register(t, cancel, Spec{})
	defer r.unregister(t, cancel)
	if t.CancelRequested { // cancelled before its run began
		t.Run = nil
		r.settle(rn, t, store.TaskCancelled, "cancelled at the client's request", nil, nil)
		return nil
	}
	// The spec leaves the record now: every tasks/get loads the record
	// while the run goes on. (No announcement: the status is unchanged.)
	spec := t.Run
	t.Run = nil
	if spec != nil {
		if ok, err := r.opts.Store.UpdateTask(ctx, t); err != nil || !ok {
			r.logger.Warn("task: its run spec was not dropped from the record", "task", t.ID, "err", err)
			if t, err = r.opts.Store.LoadTask(ctx, owner, id); err != nil {
				return err
			}
			t.Run = nil
		}
	}
	t.Run = spec
	step, err := load(t)
	t.Run = nil
	if err != nil {
		msg := "the task could not be run: " + err.Error()
		r.settle(rn, t, store.TaskFailed, msg, nil, &RPCError{Code: -32603, Message: msg})
		return nil
	}
	r.wg.Add(1)
	defer r.wg.Done()
	r.drive(runCtx, rn, t, step, nil)
	return nil
}
