package taskrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mcpgw/gateway/store"
)

// How a run's task ends: the one terminal write (compare-and-set, so one
// instance's only), kept small whatever the backend said when it is a
// failure (a failure must always fit: the store charges it against the
// owner's finished bytes but never refuses it), and a result that does
// not fit the owner's budget failing the task instead, saying so. Every
// write tells the other instances (announce) and the run's watcher
// (Spec.Changed); a task's end is reported to Options.Ended.

// ended settles a run whose context ended, by why.
func (r *Runner) ended(rn *run, t *store.Task, cause error) {
	switch {
	case errors.Is(cause, errCancelled):
		r.settle(rn, t, store.TaskCancelled, "cancelled at the client's request", nil, nil)
	case errors.Is(cause, errLost):
		// Someone else settles it (a lapsed lease), or has.
	default:
		msg := "task run stopped"
		if cause != nil {
			msg = cause.Error()
		}
		r.settle(rn, t, store.TaskFailed, msg, nil, &RPCError{Code: -32603, Message: msg})
	}
}

// settle writes the terminal status, unless someone else changed the task
// first. A result the caller's finished tasks have no room for fails the
// task instead, saying so.
func (r *Runner) settle(rn *run, t *store.Task, status, message string, result json.RawMessage, rpc *RPCError) {
	setEnd(t, status, message, result, rpc)
	err := r.write(rn, t)
	if errors.Is(err, store.ErrTaskBudget) {
		rpc = &RPCError{Code: -32603, Message: fmt.Sprintf("the tool's result (%d bytes) does not fit in what this caller may keep "+
			"of finished tasks (limits.finished_task_bytes_per_principal: %d bytes, until their ttl ends)", len(result), r.opts.FinishedBytes)}
		setEnd(t, store.TaskFailed, rpc.Message, nil, rpc)
		err = r.write(rn, t)
	}
	if err != nil {
		return
	}
	r.logger.Info("task settled", "task", t.ID, "status", t.Status)
	r.finished(t)
}

// setEnd makes t terminal. What a failure keeps is small, whatever the
// backend said (the store never refuses a task's end without a result:
// store.Tasks.UpdateTask).
func setEnd(t *store.Task, status, message string, result json.RawMessage, rpc *RPCError) {
	t.Status, t.StatusMessage, t.Result, t.InputRequests, t.Error = status, clip(message), result, nil, nil
	if rpc != nil {
		t.Error = errorRecord(rpc)
	}
}

// maxMessage bounds a status or error message a task keeps, and
// maxErrorData the data of its error (past it the data is dropped).
const (
	maxMessage   = 1024
	maxErrorData = 2048
)

// clip shortens s to maxMessage bytes, on a rune boundary.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// errorRecord is rpc as a task keeps it: its message clipped, its data
// dropped when large.
func errorRecord(rpc *RPCError) json.RawMessage {
	e := *rpc
	e.Message = clip(e.Message)
	if len(e.Data) > maxErrorData {
		e.Data = nil
	}
	raw, _ := json.Marshal(&e)
	return raw
}

// IDDigest is the digest of a task id the audit trail names a task by
// (the line of the request that created it, and that of its end): 64
// bits of SHA-256, hex.
func IDDigest(id string) string {
	sum := sha256.Sum256([]byte("mcpgw-task\x00" + id))
	return hex.EncodeToString(sum[:8])
}

// finished reports a task this runner settled (Options.Ended).
func (r *Runner) finished(t *store.Task) {
	if r.opts.Ended != nil {
		r.opts.Ended(*t)
	}
}

// errRaced: another instance changed the task first.
var errRaced = errors.New("taskrun: the task changed meanwhile")

// write stores t (compare-and-set); an error says it did not: errRaced
// (another instance settled the task), store.ErrTaskBudget (a result with
// no room), or the store's.
func (r *Runner) write(rn *run, t *store.Task) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.UpdatedAt = time.Now().UTC()
	ok, err := r.opts.Store.UpdateTask(ctx, t)
	if err == nil && !ok {
		err = errRaced
	}
	if err != nil {
		r.logger.Warn("task update not written", "task", t.ID, "status", t.Status, "err", err)
		return err
	}
	r.announce(ctx, t)
	if rn.changed != nil {
		rn.changed(*t)
	}
	return nil
}

// announce tells every instance that t's status changed, for the
// notifications/tasks of the listen streams they hold. Best effort: a
// listener that misses it still has tasks/get.
func (r *Runner) announce(ctx context.Context, t *store.Task) {
	if err := r.opts.Store.Publish(ctx, busMessage(store.BusTaskStatus, t.Owner, t.ID)); err != nil {
		r.logger.Warn("task status not announced", "task", t.ID, "err", err)
	}
}
