package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Tasks the gateway runs, on a deployment where a run cannot outlive the
// request that creates it (AWS Lambda): the run is launched elsewhere and
// taken over there (docs/guide/lambda.md, "Tasks on Lambda").

// TaskLauncher has a task the gateway runs made elsewhere than in the
// request that created it (Options.TaskLauncher): on Lambda, an
// asynchronous invocation of the same function, where an invocation
// cannot outlive its response. The instance that creates the task stores
// what the run needs (sealed, in the task's record, under a placeholder
// lease) and calls Launch; whatever receives the launch calls
// Router.RunTask with the same owner and id, on any instance of the fleet
// (the same store and keys).
type TaskLauncher interface {
	Launch(ctx context.Context, owner, id string) error
}

// PlaceholderLease is how long a launched task waits for Router.RunTask
// to take it over (an asynchronous invocation queued, a cold start)
// before a tasks/get settles it failed as never started.
const PlaceholderLease = 2 * time.Minute

// errNotLaunched: the launcher refused the task's run.
var errNotLaunched = errors.New("the task could not be started")

// launchTask creates the task for c's call to t under a placeholder
// lease, with its run spec sealed in the record, and launches its run.
func (gt *gatewayTasks) launchTask(ctx context.Context, v *vhost, c *Call, t *target, params json.RawMessage, hc *hook.Call, spec taskrun.Spec) (*store.Task, error) {
	key, err := gt.taskKeys.Sign(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: task key: %w", errStoreUnavailable, err)
	}
	p := taskPeer(c.peer)
	run := &sealed.TaskRun{VHost: v.name, Backend: t.backend, Name: t.name, Public: t.public, Params: params,
		Hooked: hc != nil, Principal: c.Principal, Claims: c.Claims, Header: withoutCredentials(c.Header),
		Session: p.sessionID, Capabilities: p.capabilities, LogLevel: p.logLevel, Snapshot: p.backends[t.backend]}
	if caller, ok := credentials.CallerFrom(ctx); ok {
		run.Caller, run.Token = true, caller.Token
	}
	spec.Changed = nil // the run is elsewhere
	spec.Run = func(id string) ([]byte, error) { return sealed.SealTaskRun(key, spec.Owner, id, run) }
	task, err := gt.opts.Tasks.Create(ctx, spec, PlaceholderLease)
	if err != nil {
		return nil, err
	}
	if err := gt.opts.TaskLauncher.Launch(ctx, task.Owner, task.ID); err != nil {
		gt.log.Error("task: launching its run failed", "task", task.ID, "error", err)
		msg := "the task could not be started: " + err.Error()
		if aerr := gt.opts.Tasks.Abandon(context.WithoutCancel(ctx), task.Owner, task.ID, msg); aerr != nil {
			gt.log.Warn("task: settling a task not launched failed", "task", task.ID, "error", aerr)
		}
		// The launcher's error may name the account and role: the log has it.
		return nil, fmt.Errorf("%w: launching its run failed (the gateway's log says why)", errNotLaunched)
	}
	return task, nil
}

// withoutCredentials is h without the caller's credentials, which never
// pass to a backend (upstream.Credential) and are not kept.
func withoutCredentials(h http.Header) http.Header {
	out := h.Clone()
	for k := range out {
		if upstream.Credential(k) {
			delete(out, k)
		}
	}
	return out
}

// watchFirstQuestion feeds first with the launched task's first status
// other than working, read from the store, for firstQuestion, until ctx
// ends.
func (gt *gatewayTasks) watchFirstQuestion(ctx context.Context, task *store.Task, first chan<- store.Task) {
	tick := time.NewTicker(firstQuestionPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now, err := gt.opts.Tasks.Get(ctx, task.Owner, task.ID)
		if err == nil && now.Status != store.TaskWorking {
			first <- *now
			return
		}
	}
}

// firstQuestionPoll is how often a launched input_before_task call reads
// its task for the first question.
const firstQuestionPoll = 200 * time.Millisecond

// RunTask runs owner's task id, which an instance created for its
// TaskLauncher, here: it takes the task over (once: a task settled, run
// elsewhere or taken over first is left alone, taskrun.ErrNotAdopted),
// rebuilds the call from the task's sealed run spec and relays it as the
// creating instance would have (post-hooks included; pre-hooks ran
// there), renewing the task's lease, until the call ends or ctx does
// (then the task fails: taskrun.ErrTimeLimit). It returns when the
// task's last status is written.
func (r *Router) RunTask(ctx context.Context, owner, id string) error {
	if r.opts.Tasks == nil {
		return errors.New("router: no task runner (Options.Tasks)")
	}
	return r.opts.Tasks.Adopt(ctx, owner, id, func(task *store.Task) (taskrun.Step, error) {
		conv, err := r.tasks.adoptedConversation(ctx, task)
		if err != nil {
			return nil, err
		}
		return conv.Step, nil
	})
}

// adoptedConversation rebuilds a launched task's call from its run spec.
func (gt *gatewayTasks) adoptedConversation(ctx context.Context, task *store.Task) (*taskrun.Conversation, error) {
	var run *sealed.TaskRun
	opened, err := gt.taskKeys.Verify(ctx, func(key []byte) bool {
		var oerr error
		run, oerr = sealed.OpenTaskRun(key, task.Owner, task.ID, task.Run)
		return oerr == nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("the task key could not be read: %w", err)
	case !opened:
		return nil, errors.New("its run spec does not open (was the gateway's key changed?)")
	}
	v, ok := gt.table.Load().vhosts[run.VHost]
	if !ok || v.backends[run.Backend] == nil {
		return nil, fmt.Errorf("backend %s of virtual host %s is no longer configured", wire.Quote(run.Backend), wire.Quote(run.VHost))
	}
	t := &target{backend: run.Backend, name: run.Name, public: run.Public, kind: "tool"}
	if err := json.Unmarshal(orEmpty(run.Params), &t.params); err != nil {
		return nil, errors.New("its params are not a JSON object")
	}
	backends := map[string]*store.BackendSnapshot{}
	if run.Snapshot != nil {
		backends[run.Backend] = run.Snapshot
	}
	c := &Call{VHost: run.VHost, Principal: run.Principal, Claims: run.Claims, Header: run.Header,
		Request: &jsonrpc.Request{Method: "tools/call", Params: run.Params}, d: relayed(v, run.Claims, t)}
	p := newPeer(run.Session, v.name, run.Capabilities, run.LogLevel, backends)
	p.ownSessions = true // a task's run, as taskPeer's
	c = taskCall(c, p)
	var hc *hook.Call
	if run.Hooked && len(gt.opts.Hooks)+len(v.hooks) > 0 {
		// Post-hooks run on the result; the pre-hooks ran where the task
		// was created (what a plugin kept between the two is not here).
		hc = &hook.Call{Method: "tools/call", VHost: v.name, Backend: t.backend, Name: t.name,
			Principal: run.Principal, SessionID: run.Session, Params: run.Params}
		observer, _ := gt.opts.Observer.(PluginObserver)
		hc.Bind(func(ctx context.Context) (json.RawMessage, error) {
			return gt.fed.toolInputSchema(ctx, v, c, t.backend, t.name)
		}, observer)
	}
	if run.Caller {
		ctx = credentials.WithCaller(ctx, credentials.Caller{Principal: run.Principal, Claims: run.Claims, Token: run.Token})
	}
	task.Principal = run.Principal // the run's, for the audit trail of its end (never stored)
	return gt.taskConversation(ctx, v, c, t, run.Params, run.Params, hc), nil
}
