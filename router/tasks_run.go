package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Tasks the gateway runs itself (SEP-2663), for a backend that does not
// implement the extension: its tasks: block (Backend.Tasks) names the
// tools that run as tasks, optionally (when the request declares the
// extension) or only so (required: -32021 without it).
//
// Such a call is decided, admitted and pre-hooked like any other
// (routed.go); then, instead of relaying it, the gateway creates the task
// in the store (internal/taskrun: within the principal's fleet-wide
// bound, with this instance's lease) and answers a CreateTaskResult at
// once, under a sealed id (internal/taskid, Kind Gateway). The call itself
// is relayed from a goroutine detached from the request, by the same
// relay a synchronous call takes (post-hooks, URIs published, envelope
// stripped), with a session runtime of its own (taskAsker): every
// question the backend asks (a 2025-era backend's elicitation, sampling or
// roots request; a 2026-07-28 backend's input_required, fulfilled as for a
// 2025 client, input_fulfil.go) becomes an input round of the task,
// answered by tasks/update on any instance. tasks/get, tasks/update and
// tasks/cancel of a gateway task are answered from the store by any
// instance (gatewayTaskMethod).
//
// input_before_task: the tool's first question is asked before the task
// is handed out. The task is created all the same, but the client waits
// (up to firstQuestionWait) for the first question: a 2026-07-28 client
// gets it as an ordinary input_required round whose requestState names the
// task, and its retry delivers the answers and gets the task; a 2025
// session is asked on its stream as for a synchronous call. A tool that
// answers at once answers the call synchronously.
//
// With a launcher (Options.TaskLauncher: Lambda, where an invocation
// cannot outlive its response) the task is created under a placeholder
// lease with what its run needs sealed in its record (sealed.TaskRun), and
// the launcher has another process call RunTask, which takes the task
// over once and relays the call from there as above (launchTask,
// RunTask; docs/tasks.md, "On AWS Lambda").
//
// Without a runner (Options.Tasks nil) no task runs: tasks: blocks are
// plain calls and the extension is not advertised for them.

// MaxTaskResultBytes bounds the result a task keeps in the store: a
// larger one fails the task, saying so (what one backend answer may hold
// in flight is bounded by the response budget before that).
const MaxTaskResultBytes = 8 << 20

// firstQuestionWait bounds how long an input_before_task call waits for
// its tool's first question before it hands out the task.
const firstQuestionWait = 10 * time.Second

// runsAsTask decides whether the gateway runs c's call to t as a task:
// refusal is -32021 for a required tool called without the extension.
func (r *Router) runsAsTask(v *vhost, c *Call, t *target) (runs bool, refusal *jsonrpc.Error) {
	if c.Request.Method != "tools/call" || r.opts.Tasks == nil {
		return false, nil
	}
	b := v.backends[t.backend]
	if b == nil || b.Tasks == nil {
		return false, nil
	}
	switch b.Tasks.Mode(t.name) {
	case TaskOptional:
		return c.peer.tasks, nil
	case TaskRequired:
		if !c.peer.tasks {
			return false, needsTasksExtension("tool " + wire.Quote(t.public) + " runs only as a task: it")
		}
		return true, nil
	}
	return false, nil
}

// gatewayTaskTool reports whether a tools/call to t runs as a task the
// gateway runs, or is refused for want of the extension, for a request
// that declares it or not (parkable: such a call is never parked).
func (r *Router) gatewayTaskTool(v *vhost, method string, t *target, declared bool) bool {
	if r.opts.Tasks == nil || method != "tools/call" {
		return false
	}
	b := v.backends[t.backend]
	if b == nil || b.Tasks == nil {
		return false
	}
	mode := b.Tasks.Mode(t.name)
	return mode == TaskRequired || mode == TaskOptional && declared
}

// advertiseTasks adds the Tasks extension to merged capabilities when the
// gateway runs tasks for a backend of v and routes the extension to this
// client (routed: capability.Session- or ModernExtensions).
func (r *Router) advertiseTasks(v *vhost, caps map[string]any, routed map[string]bool) map[string]any {
	if r.opts.Tasks == nil || !v.runsTasks || !routed[wire.ExtensionTasks] {
		return caps
	}
	ext, _ := caps["extensions"].(map[string]json.RawMessage)
	if ext == nil {
		ext = map[string]json.RawMessage{}
		caps["extensions"] = ext
	}
	if _, ok := ext[wire.ExtensionTasks]; !ok {
		ext[wire.ExtensionTasks] = json.RawMessage(`{}`)
	}
	return caps
}

// taskPolicy is the tasks: block of backend key, when the gateway runs
// tasks for it and op lists tools; nil otherwise.
func (r *Router) taskPolicy(v *vhost, op listOp, key string) TaskPolicy {
	if r.opts.Tasks == nil || op.field != "tools" || v.backends[key] == nil {
		return nil
	}
	return v.backends[key].Tasks
}

// withTaskSupport marks a listed tool the gateway runs as a task with
// execution.taskSupport (optional or required), which tells a client,
// 2025-era ones too, what to expect; other tools pass as they are.
func withTaskSupport(p TaskPolicy, item json.RawMessage) json.RawMessage {
	var name string
	hasExecution, members := false, 0
	if !wire.MembersBytes(item, func(k, val []byte) bool {
		members++
		switch string(k) {
		case "name":
			name, _ = stringMember(val)
		case "execution":
			hasExecution = true
		}
		return true
	}) {
		return item // renameItem refuses it
	}
	mode := p.Mode(name)
	if mode == TaskNever {
		return item
	}
	execution := json.RawMessage(`{"taskSupport":"` + string(mode) + `"}`)
	if hasExecution {
		out, _ := wire.Splice(item, wire.Member{Key: "execution", Value: execution})
		return out
	}
	end := bytes.LastIndexByte(item, '}')
	out := make([]byte, 0, len(item)+len(execution)+14)
	out = append(out, item[:end]...)
	if members > 0 {
		out = append(out, ',')
	}
	out = append(out, `"execution":`...)
	out = append(out, execution...)
	return append(out, item[end:]...)
}

// needsTasksExtension is -32021 for what needs the extension.
func needsTasksExtension(what string) *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{wire.ExtensionTasks: map[string]any{}}}})
	return &jsonrpc.Error{Code: wire.CodeMissingClientCapability,
		Message: what + " needs the " + wire.ExtensionTasks + " extension in this request's client capabilities", Data: data}
}

// startTask creates the task for c's call to t and starts relaying the
// call for it (or has Options.TaskLauncher run it elsewhere); params and
// sent are relay's, hc the call's hooks.
func (r *Router) startTask(ctx context.Context, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	policy := v.backends[t.backend].Tasks
	owner := taskid.PrincipalDigest(c.Principal)
	spec := taskrun.Spec{Owner: owner, VHost: v.name, Backend: t.backend, Tool: t.public, TTL: policy.ResultTTL()}
	inputFirst := policy.InputFirst(t.name)
	first := make(chan store.Task, 1)
	if inputFirst {
		spec.Changed = func(t store.Task) {
			select {
			case first <- t:
			default:
			}
		}
	}
	var task *store.Task
	var err error
	if r.opts.TaskLauncher != nil {
		task, err = r.launchTask(ctx, v, c, t, params, hc, spec)
	} else {
		conv := r.taskConversation(WithAuditNote(ctx, nil), v, taskCall(c, taskPeer(c.peer)), t, params, sent, hc)
		if task, err = r.opts.Tasks.Start(ctx, spec, conv.Step); err != nil {
			conv.Close()
		}
	}
	switch {
	case errors.Is(err, taskrun.ErrLimit):
		return refuse(c.Request.ID, http.StatusTooManyRequests, time.Second, rpcError(CodeRateLimited,
			"too many running tasks for this caller (limits.tasks_per_principal): wait for one to finish, or cancel one"))
	case errors.Is(err, errNotLaunched):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%v", err))
	case err != nil:
		return r.storeUnavailable(c.Request.ID, err)
	}
	token, err := r.sealGatewayTask(ctx, v, c, t, task)
	if err != nil {
		return r.storeUnavailable(c.Request.ID, err)
	}
	if inputFirst {
		if r.opts.TaskLauncher != nil {
			// The run is elsewhere: its first question is read from the store.
			watch, stop := context.WithCancel(ctx)
			defer stop()
			go r.watchFirstQuestion(watch, task, first)
		}
		if resp := r.firstQuestion(ctx, v, c, t, task, token, first); resp != nil {
			return resp
		}
	}
	return r.createdTask(c, task, token)
}

// taskCall is the run's own view of c's call: no stream (it outlives the
// request), its questions asked through the task, a 2025-era client's
// view of a 2026-07-28 backend (its input_required rounds fulfilled, its
// result envelope stripped: the result is stored and inlined in
// tasks/get); p is its peer (taskPeer).
func taskCall(c *Call, p *peer) *Call {
	run := *c
	run.Stream, run.parked, run.modern, run.decorated = nil, true, false, false
	run.peer = p
	return &run
}

// taskConversation relays run's call to t as a task's conversation: each
// question the backend asks becomes an input round. ctx's values are the
// call's (its caller's credentials), its end is not.
func (r *Router) taskConversation(ctx context.Context, v *vhost, run *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *taskrun.Conversation {
	return taskrun.Converse(ctx, func(ctx context.Context, ask taskrun.Ask) (json.RawMessage, error) {
		call := *run
		call.Runtime = taskAsker(ask)
		resp := r.relay(ctx, v, &call, t, params, sent, hc)
		if resp.Error != nil {
			var e *jsonrpc.Error
			if !errors.As(resp.Error, &e) {
				return nil, &taskrun.RPCError{Code: CodeInternalError, Message: resp.Error.Error()}
			}
			return nil, &taskrun.RPCError{Code: int(e.Code), Message: e.Message, Data: e.Data}
		}
		if len(resp.Result) > MaxTaskResultBytes {
			return nil, &taskrun.RPCError{Code: CodeInternalError, Message: fmt.Sprintf(
				"the tool's result has %d bytes, more than a task keeps (%d)", len(resp.Result), MaxTaskResultBytes)}
		}
		return resp.Result, nil
	})
}

// firstQuestion waits for an input_before_task tool's first question, and
// answers the call with it (nil: hand out the task).
func (r *Router) firstQuestion(ctx context.Context, v *vhost, c *Call, t *target, task *store.Task, token string, first <-chan store.Task) *jsonrpc.Response {
	wait := time.NewTimer(firstQuestionWait)
	defer wait.Stop()
	var now store.Task
	select {
	case now = <-first:
	case <-wait.C:
		return nil
	case <-ctx.Done():
		return nil
	}
	switch now.Status {
	case store.TaskCompleted: // it asked nothing: a synchronous answer
		return resultResponse(c.Request.ID, now.Result)
	case store.TaskFailed:
		var e jsonrpc.Error
		if json.Unmarshal(now.Error, &e) == nil && e.Code != 0 {
			return errorResponse(c.Request.ID, &e)
		}
		return nil
	case store.TaskInputRequired:
	default:
		return nil
	}
	if c.modern {
		// An ordinary input_required round; its retry answers the task.
		state, err := r.sealState(ctx, binding(v, c, t), sealed.RequestState{Backend: t.backend, Task: task.ID})
		if err != nil {
			return r.storeUnavailable(c.Request.ID, err)
		}
		result := map[string]json.RawMessage{"inputRequests": wire.RawObject(now.InputRequests)}
		result["resultType"], _ = json.Marshal(envelope.ResultInputRequired)
		result["requestState"], _ = json.Marshal(state)
		return resultResponse(c.Request.ID, wire.RawObject(result))
	}
	if c.Runtime != nil && c.Stream != nil {
		// A 2025 session: asked on its stream, as a synchronous call would.
		if answers := askSession(ctx, c, now.InputRequests); answers != nil {
			if err := r.opts.Tasks.Update(ctx, task.Owner, task.ID, answers); err != nil {
				r.log.Warn("task: the first answers were not posted", "task", task.ID, "error", err)
			}
		}
	}
	return nil
}

// askSession asks a 2025 session's client every request of a round at
// once; nil when one could not be asked or was refused (the client can
// still answer with tasks/update).
func askSession(ctx context.Context, c *Call, requests map[string]json.RawMessage) map[string]json.RawMessage {
	answers := make(map[string]json.RawMessage, len(requests))
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for key, raw := range requests {
		var in InputRequest
		if json.Unmarshal(raw, &in) != nil {
			return nil
		}
		wg.Go(func() {
			resp := c.Runtime.AskClient(ctx, c, &jsonrpc.Request{Method: in.Method, Params: in.Params})
			mu.Lock()
			defer mu.Unlock()
			if resp.Error != nil {
				failed = true
				return
			}
			answers[key] = resp.Result
		})
	}
	wg.Wait()
	if failed {
		return nil
	}
	return answers
}

// answerTaskInput answers the retry of an input_before_task round (its
// requestState names the task): the answers are posted to the task and
// the retry gets the task.
func (r *Router) answerTaskInput(ctx context.Context, v *vhost, c *Call, t *target, st *sealed.RequestState) *jsonrpc.Response {
	var answers map[string]json.RawMessage
	if raw, ok := t.params["inputResponses"]; !ok || json.Unmarshal(raw, &answers) != nil || answers == nil {
		return errorResponse(c.Request.ID, invalidParams("inputResponses must be an object answering the input requests"))
	}
	owner := taskid.PrincipalDigest(c.Principal)
	if r.opts.Tasks == nil {
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: its task is not run here"))
	}
	err := r.opts.Tasks.Update(ctx, owner, st.Task, answers)
	var task *store.Task
	if err == nil {
		task, err = r.opts.Tasks.Get(ctx, owner, st.Task)
	}
	switch {
	case errors.Is(err, taskrun.ErrUnknown):
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: its task has ended and expired"))
	case err != nil:
		return r.storeUnavailable(c.Request.ID, err)
	}
	token, err := r.sealGatewayTask(ctx, v, c, t, task)
	if err != nil {
		return r.storeUnavailable(c.Request.ID, err)
	}
	return r.createdTask(c, task, token)
}

// createdTask is the CreateTaskResult for task.
func (r *Router) createdTask(c *Call, task *store.Task, token string) *jsonrpc.Response {
	raw, err := json.Marshal(taskrun.Created(task, token, time.Now()))
	if err != nil {
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "cannot encode the task"))
	}
	return resultResponse(c.Request.ID, raw)
}

// sealGatewayTask is the client's id of a task the gateway runs.
func (r *Router) sealGatewayTask(ctx context.Context, v *vhost, c *Call, t *target, task *store.Task) (string, error) {
	return r.sealTaskID(ctx, taskid.Claims{Kind: taskid.Gateway, VHost: v.name, Backend: t.backend,
		Principal: task.Owner, TaskID: task.ID, Tool: t.public,
		Expires: time.Now().Add(maxTaskTokenLife + task.TTL)})
}

// gatewayTaskMethod answers tasks/get, tasks/update and tasks/cancel for
// a task the gateway runs, from the store, on any instance.
func (r *Router) gatewayTaskMethod(ctx context.Context, c *Call, params map[string]json.RawMessage, token string, claims taskid.Claims) *jsonrpc.Response {
	id, tasks := c.Request.ID, r.opts.Tasks
	var err error
	ack := json.RawMessage(`{}`)
	switch c.Request.Method {
	case "tasks/get":
		var task *store.Task
		if task, err = tasks.Get(ctx, claims.Principal, claims.TaskID); err == nil {
			ack, err = json.Marshal(taskrun.Detailed(task, token, time.Now()))
		}
	case "tasks/update":
		var answers map[string]json.RawMessage
		if json.Unmarshal(params["inputResponses"], &answers) != nil || answers == nil {
			return errorResponse(id, invalidParams("tasks/update needs an object inputResponses"))
		}
		err = tasks.Update(ctx, claims.Principal, claims.TaskID, answers)
	case "tasks/cancel":
		err = tasks.Cancel(ctx, claims.Principal, claims.TaskID)
	}
	switch {
	case errors.Is(err, taskrun.ErrUnknown):
		return errorResponse(id, unknownTask(token))
	case err != nil:
		return r.storeUnavailable(id, err)
	}
	return resultResponse(id, ack)
}

// taskPeer is the client as a task's run presents it to the backend: the
// caller's own capabilities, with elicitation, which a client of tasks
// answers through tasks/get and tasks/update whatever it declared.
func taskPeer(p *peer) *peer {
	cp := *p
	var caps map[string]json.RawMessage
	if json.Unmarshal(orEmpty(p.capabilities), &caps) != nil || caps == nil {
		caps = map[string]json.RawMessage{}
	}
	if _, ok := caps["elicitation"]; !ok {
		caps["elicitation"] = json.RawMessage(`{}`)
	}
	cp.capabilities = wire.RawObject(caps)
	return &cp
}

// taskAsker is the session runtime of a task's run: each question the
// backend asks becomes part of an input round of the task.
type taskAsker taskrun.Ask

func (a taskAsker) AskClient(ctx context.Context, _ *Call, req *jsonrpc.Request) *jsonrpc.Response {
	raw, err := json.Marshal(InputRequest{Method: req.Method, Params: req.Params})
	if err != nil {
		return &jsonrpc.Response{Error: rpcError(CodeInternalError, "cannot encode the backend's request")}
	}
	answer, err := a(ctx, raw)
	if err != nil {
		return &jsonrpc.Response{Error: rpcError(CodeInternalError, "the task ended before the client answered")}
	}
	return &jsonrpc.Response{Result: answer}
}

func (taskAsker) ListenersChanged(context.Context, store.SessionID) {}

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
func (r *Router) launchTask(ctx context.Context, v *vhost, c *Call, t *target, params json.RawMessage, hc *hook.Call, spec taskrun.Spec) (*store.Task, error) {
	key, err := r.taskKeys.Sign(ctx)
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
	task, err := r.opts.Tasks.Create(ctx, spec, PlaceholderLease)
	if err != nil {
		return nil, err
	}
	if err := r.opts.TaskLauncher.Launch(ctx, task.Owner, task.ID); err != nil {
		r.log.Error("task: launching its run failed", "task", task.ID, "error", err)
		msg := "the task could not be started: " + err.Error()
		if aerr := r.opts.Tasks.Abandon(context.WithoutCancel(ctx), task.Owner, task.ID, msg); aerr != nil {
			r.log.Warn("task: settling a task not launched failed", "task", task.ID, "error", aerr)
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
func (r *Router) watchFirstQuestion(ctx context.Context, task *store.Task, first chan<- store.Task) {
	tick := time.NewTicker(firstQuestionPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now, err := r.opts.Tasks.Get(ctx, task.Owner, task.ID)
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
// (then the task fails: taskrun.ErrTimeLimit). ctx carries what the
// handler would give a request (credentials.WithUserTokens). It returns
// when the task's last status is written.
func (r *Router) RunTask(ctx context.Context, owner, id string) error {
	if r.opts.Tasks == nil {
		return errors.New("router: no task runner (Options.Tasks)")
	}
	return r.opts.Tasks.Adopt(ctx, owner, id, func(task *store.Task) (taskrun.Step, error) {
		conv, err := r.adoptedConversation(ctx, task)
		if err != nil {
			return nil, err
		}
		return conv.Step, nil
	})
}

// adoptedConversation rebuilds a launched task's call from its run spec.
func (r *Router) adoptedConversation(ctx context.Context, task *store.Task) (*taskrun.Conversation, error) {
	var run *sealed.TaskRun
	opened, err := r.taskKeys.Verify(ctx, func(key []byte) bool {
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
	v, ok := r.table.Load().vhosts[run.VHost]
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
		Request: &jsonrpc.Request{Method: "tools/call", Params: run.Params}}
	c = taskCall(c, newPeer(run.Session, v.name, run.Capabilities, run.LogLevel, backends))
	var hc *hook.Call
	if run.Hooked && len(r.opts.Hooks)+len(v.hooks) > 0 {
		// Post-hooks run on the result; the pre-hooks ran where the task
		// was created (what a plugin kept between the two is not here).
		hc = &hook.Call{Method: "tools/call", VHost: v.name, Backend: t.backend, Name: t.name,
			Principal: run.Principal, SessionID: run.Session, Params: run.Params}
		observer, _ := r.opts.Observer.(PluginObserver)
		hc.Bind(func(ctx context.Context) (json.RawMessage, error) {
			return r.toolInputSchema(ctx, v, c, t.backend, t.name)
		}, observer)
	}
	if run.Caller {
		ctx = credentials.WithCaller(ctx, credentials.Caller{Principal: run.Principal, Claims: run.Claims, Token: run.Token})
	}
	return r.taskConversation(WithAuditNote(ctx, nil), v, c, t, run.Params, run.Params, hc), nil
}
