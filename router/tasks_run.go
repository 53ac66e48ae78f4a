package router

import (
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
	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
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
// stripped), with a client of its own (taskRun, caller_task.go): every
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
// RunTask; docs/design/tasks.md, "On AWS Lambda").
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

// taskMode is how the gateway runs a tools/call to t: TaskNever for any
// other method, without a runner, or for a backend without a tasks: block.
func (gt *gatewayTasks) taskMode(v *vhost, method string, t *target) TaskMode {
	if !wire.MethodOf(method).Taskable || gt.opts.Tasks == nil {
		return TaskNever
	}
	if b := v.backends[t.backend]; b != nil && b.Tasks != nil {
		return b.Tasks.Mode(t.name)
	}
	return TaskNever
}

// runsAsTask decides whether the gateway runs c's call to t as a task:
// refusal is -32021 for a required tool called without the extension.
func (gt *gatewayTasks) runsAsTask(v *vhost, c *Call, t *target) (runs bool, refusal *jsonrpc.Error) {
	switch gt.taskMode(v, c.Request.Method, t) {
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

// advertiseTasks adds the Tasks extension to merged capabilities when the
// gateway runs tasks for a backend of v and routes the extension to this
// client (routed: capability.Session- or ModernExtensions).
func (gt *gatewayTasks) advertiseTasks(v *vhost, caps map[string]any, routed map[string]bool) map[string]any {
	if gt.opts.Tasks == nil || !v.runsTasks || !routed[wire.ExtensionTasks] {
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
func (fd *federation) taskPolicy(v *vhost, op federated.Op, key string) TaskPolicy {
	if fd.opts.Tasks == nil || op.Field != "tools" || v.backends[key] == nil {
		return nil
	}
	return v.backends[key].Tasks
}

// withTaskSupport marks a listed tool the gateway runs as a task with
// execution.taskSupport (optional or required), which tells a client,
// 2025-era ones too, what to expect; other tools pass as they are.
func withTaskSupport(p TaskPolicy, item json.RawMessage) json.RawMessage {
	raw, _ := wire.MemberValue(item, "name")
	name, _ := wire.String(raw)
	mode := p.Mode(name)
	if mode == TaskNever {
		return item
	}
	out, _ := wire.WithMember(item, "execution", []byte(`{"taskSupport":"`+string(mode)+`"}`))
	return out // (an item that is not an object: as it is; the naming rule refuses it)
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
func (gt *gatewayTasks) startTask(ctx context.Context, v *vhost, c *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	policy := v.backends[t.backend].Tasks
	owner := taskid.PrincipalDigest(c.Principal)
	inputFirst := policy.InputFirst(t.name)
	// A first question answered before the task is handed out bounds its
	// round by the client's wait: one never answered leaves a client
	// without the task's id, to cancel it with.
	spec := taskrun.Spec{Owner: owner, Principal: c.Principal, VHost: v.name, Backend: t.backend, Tool: t.public,
		TTL: policy.ResultTTL(), FirstRoundBounded: inputFirst}
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
	if gt.opts.TaskLauncher != nil {
		task, err = gt.launchTask(ctx, v, c, t, params, hc, spec)
	} else {
		conv := gt.taskConversation(ctx, v, taskCall(c, taskPeer(c.peer)), t, params, sent, hc)
		if task, err = gt.opts.Tasks.Start(ctx, spec, conv.Step); err != nil {
			conv.Close()
		}
	}
	switch {
	case errors.Is(err, taskrun.ErrLimit), errors.Is(err, taskrun.ErrBudget):
		return gt.taskRefusal(c, err)
	case errors.Is(err, errNotLaunched):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%v", err))
	case err != nil:
		return gt.storeUnavailable(c.Request.ID, err)
	}
	noteTask(c, task.ID)
	token, err := gt.sealGatewayTask(ctx, v, c, t, task)
	if err != nil {
		return gt.storeUnavailable(c.Request.ID, err)
	}
	if inputFirst {
		if gt.opts.TaskLauncher != nil {
			// The run is elsewhere: its first question is read from the store.
			watch, stop := context.WithCancel(ctx)
			defer stop()
			go gt.watchFirstQuestion(watch, task, first)
		}
		if resp := gt.firstQuestion(ctx, v, c, t, task, token, first); resp != nil {
			return resp
		}
	}
	return gt.createdTask(c, task, token)
}

// taskRefusal is the 429 of a task over one of its caller's bounds
// (taskrun.ErrLimit or ErrBudget), naming the field that sets it.
func (gt *gatewayTasks) taskRefusal(c *Call, err error) *jsonrpc.Response {
	field, most, msg := "limits.tasks_per_principal", gt.opts.Tasks.PerPrincipal(),
		"too many running tasks for this caller: %d run, the most one caller may run (%s); wait for one to finish, or cancel one"
	wait := time.Second
	if errors.Is(err, taskrun.ErrBudget) {
		field, most, msg = "limits.finished_task_bytes_per_principal", int(gt.opts.Tasks.FinishedBytes()),
			"this caller's finished tasks hold %d bytes, the most one caller may keep (%s): no task starts until some expire (their ttl)"
		wait = 10 * time.Second
	}
	return refuse(c.Request.ID, http.StatusTooManyRequests, wait, &jsonrpc.Error{Code: CodeRateLimited,
		Message: fmt.Sprintf(msg, most, field), Data: LimitData(field, most)})
}

// taskCall is the run's own view of c's call: no stream and no audit
// note (it outlives the request), a task's client (caller_task.go: its questions asked through
// the task, a 2026-07-28 backend's input_required rounds fulfilled, its
// result stored without the envelope and inlined in tasks/get); p is its
// peer (taskPeer).
func taskCall(c *Call, p *peer) *Call {
	run := *c
	run.Stream, run.Caller, run.Audit = nil, taskCaller{}, nil
	run.peer = p
	return &run
}

// taskConversation relays run's call to t as a task's conversation: each
// question the backend asks becomes an input round. ctx's values are the
// call's (its caller's credentials), its end is not.
func (gt *gatewayTasks) taskConversation(ctx context.Context, v *vhost, run *Call, t *target, params, sent json.RawMessage, hc *hook.Call) *taskrun.Conversation {
	return taskrun.Converse(ctx, &taskRun{r: gt, v: v, run: run, t: t, params: params, sent: sent, hc: hc})
}

// taskRun is a gateway-run task's call as its runner runs it
// (taskrun.Call): relayed as a synchronous call is, its client a
// taskCaller asking through the round the runner gives it.
type taskRun struct {
	r            *gatewayTasks
	v            *vhost
	run          *Call
	t            *target
	params, sent json.RawMessage
	hc           *hook.Call
}

// Run relays the call; its result is what the task keeps, its error the
// one the task fails with.
func (tr *taskRun) Run(ctx context.Context, ask taskrun.Ask) (taskrun.Answer, error) {
	if !tr.r.holdOpen() {
		return nil, &taskrun.RPCError{Code: CodeInternalError, Message: "the gateway is shutting down"}
	}
	defer tr.r.cleanup.Done()
	call := *tr.run
	call.Caller = taskCaller{ask: ask} // caller_task.go
	resp := tr.r.calls.relay(ctx, tr.v, &call, tr.t, tr.params, tr.sent, tr.hc)
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
	return taskrun.RawResult(resp.Result), nil
}

// firstQuestion waits for an input_before_task tool's first question, and
// answers the call with it (nil: hand out the task).
func (gt *gatewayTasks) firstQuestion(ctx context.Context, v *vhost, c *Call, t *target, task *store.Task, token string, first <-chan store.Task) *jsonrpc.Response {
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
	return c.Caller.taskRound(ctx, gt.calls, v, c, t, task, now) // caller_*.go
}

// askRound asks a client every request of a round at once; nil when one
// could not be asked or was refused (the client can still answer with
// tasks/update).
func askRound(ctx context.Context, c *Call, ask askFunc, requests map[string]json.RawMessage) map[string]json.RawMessage {
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
			resp := ask(ctx, c, &jsonrpc.Request{Method: in.Method, Params: in.Params})
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
func (gt *gatewayTasks) answerTaskInput(ctx context.Context, v *vhost, c *Call, t *target, st *sealed.RequestState) *jsonrpc.Response {
	var answers map[string]json.RawMessage
	if raw, ok := t.params["inputResponses"]; !ok || json.Unmarshal(raw, &answers) != nil || answers == nil {
		return errorResponse(c.Request.ID, invalidParams("inputResponses must be an object answering the input requests"))
	}
	owner := taskid.PrincipalDigest(c.Principal)
	if gt.opts.Tasks == nil {
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: its task is not run here"))
	}
	err := gt.opts.Tasks.Update(ctx, owner, st.Task, answers)
	var task *store.Task
	if err == nil {
		task, err = gt.opts.Tasks.Get(ctx, owner, st.Task)
	}
	switch {
	case errors.Is(err, taskrun.ErrUnknown):
		return errorResponse(c.Request.ID, invalidParams("invalid requestState: its task has ended and expired"))
	case err != nil:
		return gt.storeUnavailable(c.Request.ID, err)
	}
	noteTask(c, task.ID)
	token, err := gt.sealGatewayTask(ctx, v, c, t, task)
	if err != nil {
		return gt.storeUnavailable(c.Request.ID, err)
	}
	return gt.createdTask(c, task, token)
}

// createdTask is the CreateTaskResult for task.
func (gt *gatewayTasks) createdTask(c *Call, task *store.Task, token string) *jsonrpc.Response {
	raw, err := json.Marshal(taskrun.Created(task, token, time.Now()))
	if err != nil {
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "cannot encode the task"))
	}
	return resultResponse(c.Request.ID, raw)
}

// sealGatewayTask is the client's id of a task the gateway runs.
func (gt *gatewayTasks) sealGatewayTask(ctx context.Context, v *vhost, c *Call, t *target, task *store.Task) (string, error) {
	return gt.sealTaskID(ctx, taskid.Claims{Kind: taskid.Gateway, VHost: v.name, Backend: t.backend,
		Principal: task.Owner, TaskID: task.ID, Tool: t.public,
		Expires: time.Now().Add(maxTaskTokenLife + task.TTL)})
}

// gatewayTaskMethod answers tasks/get, tasks/update and tasks/cancel for
// a task the gateway runs, from the store, on any instance.
func (gt *gatewayTasks) gatewayTaskMethod(ctx context.Context, c *Call, params map[string]json.RawMessage, token string, claims taskid.Claims) *jsonrpc.Response {
	id, tasks := c.Request.ID, gt.opts.Tasks
	var err error
	ack := json.RawMessage(`{}`)
	switch wire.MethodOf(c.Request.Method).TaskAction {
	case wire.TaskReads:
		var task *store.Task
		if task, err = tasks.Get(ctx, claims.Principal, claims.TaskID); err == nil {
			ack, err = json.Marshal(taskrun.Detailed(task, token, time.Now()))
		}
	case wire.TaskAnswers:
		var answers map[string]json.RawMessage
		if json.Unmarshal(params["inputResponses"], &answers) != nil || answers == nil {
			return errorResponse(id, invalidParams("tasks/update needs an object inputResponses"))
		}
		err = tasks.Update(ctx, claims.Principal, claims.TaskID, answers)
	case wire.TaskCancels:
		err = tasks.Cancel(ctx, claims.Principal, claims.TaskID)
	}
	switch {
	case errors.Is(err, taskrun.ErrUnknown):
		return errorResponse(id, unknownTask(token))
	case err != nil:
		return gt.storeUnavailable(id, err)
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
	cp.ownSessions = true // not the capabilities the kept backend sessions were opened with
	return &cp
}
