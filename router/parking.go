package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/taskid"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2025-era backend asks its client things in the middle of a call
// (sampling, elicitation, roots): it sends a request on the call's stream
// and waits. A 2026-07-28 client cannot be sent requests; it is asked with
// an input_required result instead, and answers by calling again, on any
// instance. So when a 2026-07-28 call to a 2025-era backend asks, the
// gateway parks it: the call is a gateway-run task the client never sees
// (internal/taskrun, the store's Tasks role), whose rounds the client is
// asked as input_required results, each with a sealed requestState naming
// the task and the round.
//
//   - The owner's side (parkStart): the call runs as a taskrun
//     Conversation; its first Step runs where the client waits
//     (Runner.StartOnInput), so a call that never asks answers as any
//     call does, with no store write. Its first round creates the task
//     (within limits.parked_calls_per_principal, counted fleet-wide
//     under an owner of its own: parkOwner) with this instance's lease,
//     and the run goes on detached, bounded per round by
//     streams.client_request_timeout (past it the backend call is
//     cancelled) and by the backend's timeout.
//   - The retry's side (parkRetry, parking_retry.go), on any
//     instance: the answers are posted to the task (partial rounds too)
//     and the retry waits for the task's next round or its end
//     (Runner.Answer); a retry repeated after its answer was lost gets
//     the same again; a task whose instance died is settled failed within
//     its lease, and the retry told so.
//
// Without a Parking (ModernClient.Parks nil: on Lambda, where an
// invocation cannot outlive its answer) nothing parks: the backend's
// request gets -32601.

// Parking runs the calls parked on this instance as hidden gateway-run
// tasks, of a runner of their own, so their bound and lease are theirs.
type Parking struct {
	runner *taskrun.Runner
	opts   ParkOptions

	// calls are the backend calls running (their Conversations'
	// goroutines, which outlive a run's end by as long as the call takes
	// to unwind): Close waits for them, so that a call's last backend
	// exchange (its cancellation, its DELETE) happens before the router
	// closes its backend clients.
	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
}

// ParkOptions configure a Parking. Zero values mean the defaults.
type ParkOptions struct {
	Store taskrun.Store
	// PerPrincipal bounds the calls one principal has parked at once,
	// across every instance (limits.parked_calls_per_principal, default
	// DefaultParkedPerPrincipal): a parked call holds goroutines and a
	// backend connection while a person answers.
	PerPrincipal int
	// Lease is the lease of the instance holding a parked call, renewed
	// every third of it (streams.call_lease, default 10s): a retry of a
	// call whose instance died is told so once it lapses, and the call
	// stops counting against its principal's bound.
	Lease time.Duration
	// AnswerWithin bounds how long a round waits for the client's retry,
	// and a retry for the call's next outcome
	// (streams.client_request_timeout, default 5m).
	AnswerWithin time.Duration
	// FinishedBytes bounds what one principal's finished parked calls
	// (answers not yet fetched by a retry) hold in the store
	// (limits.finished_task_bytes_per_principal, default
	// taskrun.DefaultFinishedBytes).
	FinishedBytes int64
	Logger        *slog.Logger
}

// DefaultParkedPerPrincipal is ParkOptions.PerPrincipal's default (config
// limits.parked_calls_per_principal).
const DefaultParkedPerPrincipal = 8

// parkRetryAfter is what a client over the bound is told to wait.
const parkRetryAfter = 10 * time.Second

// NewParking returns a Parking on opts.Store; Subscribe subscribes it to
// the bus, Close ends its calls.
func NewParking(opts ParkOptions) (*Parking, error) {
	if opts.PerPrincipal <= 0 {
		opts.PerPrincipal = DefaultParkedPerPrincipal
	}
	if opts.Lease <= 0 {
		opts.Lease = taskrun.DefaultLease
	}
	if opts.AnswerWithin <= 0 {
		opts.AnswerWithin = 5 * time.Minute
	}
	runner, err := taskrun.New(taskrun.Options{Store: opts.Store, Lease: opts.Lease, PerPrincipal: opts.PerPrincipal,
		FinishedBytes: opts.FinishedBytes, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &Parking{runner: runner, opts: opts}, nil
}

// Subscribe subscribes the parked calls to the store's bus (answers for
// this instance's calls, the next outcome for its retries), waiting at
// most until ctx ends (taskrun.Runner.Subscribe).
func (p *Parking) Subscribe(ctx context.Context) error { return p.runner.Subscribe(ctx) }

// Close ends the calls parked on this instance, and waits for them: a
// retry is told the call has ended because its instance shut down.
func (p *Parking) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.runner.Close()
	p.calls.Wait()
}

// enter counts a backend call about to run; false once Close has begun.
func (p *Parking) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.calls.Add(1)
	return true
}

// parkOwner is the task owner of principal's parked calls: a digest with
// a prefix of its own, so they are counted apart from its tasks.
func parkOwner(principal string) string { return "park." + taskid.PrincipalDigest(principal) }

// InputRequest is one thing a backend asks the client.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// parkStart runs c's call to t, decided and hooked (routed), where it may
// park: its answer when it asks nothing, else its first round. Either is
// finished for the client as any routed answer is.
func (rc *routedCalls) parkStart(ctx context.Context, v *vhost, c *Call, m *ModernClient, t *target, params, sent json.RawMessage, hc *hook.Call) *jsonrpc.Response {
	p := m.Parks
	conv := taskrun.Converse(ctx, &parkedRun{r: rc, v: v, c: c, m: m, t: t, params: params, sent: sent, hc: hc})
	spec := taskrun.Spec{Owner: parkOwner(c.Principal), VHost: v.name, Backend: t.backend, Tool: t.public,
		TTL: 2*p.opts.AnswerWithin + time.Minute, AnswerWithin: p.opts.AnswerWithin,
		Unanswered: fmt.Errorf("the client did not answer within %s (streams.client_request_timeout)", p.opts.AnswerWithin)}
	task, out, err := p.runner.StartOnInput(ctx, spec, conv.Step)
	var rpc *taskrun.RPCError
	switch {
	case errors.Is(err, taskrun.ErrLimit):
		return refuse(c.Request.ID, http.StatusTooManyRequests, parkRetryAfter, &jsonrpc.Error{Code: CodeRateLimited,
			Message: fmt.Sprintf("too many calls waiting for this caller's input: %d are parked, the most one caller may have (limits.parked_calls_per_principal); answer or cancel one first", p.opts.PerPrincipal),
			Data:    LimitData("limits.parked_calls_per_principal", p.opts.PerPrincipal)})
	case errors.Is(err, taskrun.ErrBudget):
		most := int(p.runner.FinishedBytes())
		return refuse(c.Request.ID, http.StatusTooManyRequests, parkRetryAfter, &jsonrpc.Error{Code: CodeRateLimited,
			Message: fmt.Sprintf("this caller's finished parked calls hold %d bytes, the most one caller may keep (limits.finished_task_bytes_per_principal): no call parks until some expire", most),
			Data:    LimitData("limits.finished_task_bytes_per_principal", most)})
	case errors.Is(err, taskrun.ErrClosed):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "the gateway is shutting down"))
	case err != nil && ctx.Err() != nil:
		// The client left before the call asked anything or answered: a
		// 2026-07-28 client cancels by closing the request.
		return errorResponse(c.Request.ID, rpcError(CodeRequestCancelled, "request cancelled by the client"))
	case errors.As(err, &rpc):
		return errorResponse(c.Request.ID, &jsonrpc.Error{Code: int64(rpc.Code), Message: rpc.Message, Data: rpc.Data})
	case err != nil:
		return rc.storeUnavailable(c.Request.ID, err) // the task could not be created
	case task == nil:
		answer, _ := out.Answer.(parkedAnswer) // the call's own response: nothing stored, nothing decoded
		return parkFinished(c, answer.resp)
	}
	resp := rc.parkAsks(ctx, v, c, t, task.ID, task.Round, task.InputRequests)
	if resp.Error != nil {
		// No retry can continue a round whose state could not be sealed:
		// the call ends now rather than when its round times out.
		_ = p.runner.Cancel(context.WithoutCancel(ctx), task.Owner, task.ID)
	}
	return resp
}

// parkedRun is a parked call as its runner runs it (taskrun.Call), as a
// gateway-run task's taskRun is: relayed as the 2026-07-28 request it is,
// decided and hooked, its client (ModernClient.parked) asked through the
// round the runner gives it.
type parkedRun struct {
	r            *routedCalls
	v            *vhost
	c            *Call
	m            *ModernClient
	t            *target
	params, sent json.RawMessage
	hc           *hook.Call
}

// Run relays the call. Its answer is the whole response, error or result:
// a parked call's task "completes" with whatever the call answered.
func (pr *parkedRun) Run(ctx context.Context, ask taskrun.Ask) (taskrun.Answer, error) {
	p := pr.m.Parks
	if !p.enter() {
		return nil, taskrun.ErrClosed
	}
	defer p.calls.Done()
	call := *pr.c // the call as the parked run sees it: its questions go to the task
	call.Caller = pr.m.parked(ask)
	return parkedAnswer{resp: pr.r.relay(ctx, pr.v, &call, pr.t, pr.params, pr.sent, pr.hc)}, nil
}

// parkedAnswer is a parked call's response; the hidden task keeps it
// encoded, for a retry on any instance (keptAnswer).
type parkedAnswer struct{ resp *jsonrpc.Response }

// Result is the response as the task keeps it.
func (a parkedAnswer) Result() (json.RawMessage, error) { return wire.EncodeMessage(a.resp) }

// keptAnswer is a parked call's response as its task keeps it, for a
// retry; nil when it cannot be read.
func keptAnswer(kept json.RawMessage) *jsonrpc.Response {
	msg, err := wire.Decode(kept)
	answer, _ := msg.(*jsonrpc.Response)
	if err != nil {
		return nil
	}
	return answer
}

// parkFinished is the answer to c made of its parked call's response
// (nil: one that could not be read).
func parkFinished(c *Call, answer *jsonrpc.Response) *jsonrpc.Response {
	if answer == nil {
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "a parked call's answer could not be read"))
	}
	out := *answer
	out.ID = c.Request.ID
	return &out
}

// parkAsks is input_required with a round's requests and a sealed state
// naming the parked call (its task) and the round.
func (rc *routedCalls) parkAsks(ctx context.Context, v *vhost, c *Call, t *target, park string, round int, inputs map[string]json.RawMessage) *jsonrpc.Response {
	token, err := rc.sealState(ctx, binding(v, c, t), sealed.RequestState{Backend: t.backend, Park: park, Round: round})
	if err != nil {
		return rc.storeUnavailable(c.Request.ID, err)
	}
	result := map[string]json.RawMessage{"inputRequests": wire.RawObject(inputs)}
	result["resultType"], _ = json.Marshal(envelope.ResultInputRequired)
	result["requestState"], _ = json.Marshal(token)
	return resultResponse(c.Request.ID, wire.RawObject(result))
}
