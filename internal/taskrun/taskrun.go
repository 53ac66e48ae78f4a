// Package taskrun runs the tasks the gateway runs itself (SEP-2663
// gateway-run tasks, for backends without the extension) on the store's
// Tasks role, independently of how the backend is called: the router hands
// it a Step that drives one backend call, and any instance answers
// tasks/get, tasks/update and tasks/cancel for a task another one runs.
//
// A task's life, with the store's guarantees (store/tasks.go):
//
//   - Start creates the task (within the owner's fleet-wide bound) with
//     this instance's lease, and only then returns, so a tasks/get on any
//     instance resolves; the run goes on detached from the request.
//   - The run calls Step; an Outcome asking for input opens a round (keys
//     prefixed by the round, unique over the task's life) and waits for
//     the answers, which any instance posts (Update: held in the store,
//     partial rounds too, with a bus message); once the round is complete,
//     Step is called again with them, under the backend's own keys.
//   - The run renews its lease every third of it and watches for a cancel
//     (the bus, and the record at each renewal, so a lost message costs a
//     delay only); Cancel from any instance cancels Step's context and the
//     task settles cancelled.
//   - Every write is compare-and-set: a run whose task was settled by
//     someone else (its lease lapsed: Get settles it failed) stops without
//     writing.
//   - Where the creating process cannot run the task (a Lambda invocation
//     ends with its response), Create stores it under a placeholder
//     runner with what its run needs (Spec.Run, opaque here), and another
//     process Adopts it: takes the placeholder's lease (exactly one taker
//     wins, so a run delivered twice runs once) and drives it there until
//     it ends or the caller's context does (ErrTimeLimit).
//
// Step errors: a *RPCError is the protocol error the task fails with;
// another error fails it with -32603 naming it.
package taskrun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/gateway/store"
)

// Outcome is what one Step of the backend call ended with: a Result (the
// CallToolResult; a tool error is a result too) or InputRequests, keyed by
// the backend's own keys.
type Outcome struct {
	Result        json.RawMessage
	InputRequests map[string]json.RawMessage
	// Answer, from a Conversation, is the call's answer as the call made
	// it; a task keeps Answer.Result, made only then, and a caller
	// answered by the first Step (StartOnInput) takes the value as it is.
	Answer Answer
}

// kept is what a task keeps of a completed Outcome.
func (o Outcome) kept() (json.RawMessage, error) {
	if o.Result == nil && o.Answer != nil {
		return o.Answer.Result()
	}
	return o.Result, nil
}

// Step drives the backend call: answers is nil the first time and, after
// an Outcome with InputRequests, the client's answers to them, under the
// same keys. Its context ends when the task is cancelled, or when this
// instance loses the task.
type Step func(ctx context.Context, answers map[string]json.RawMessage) (Outcome, error)

// RPCError is a JSON-RPC error a task fails with.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Spec is the task to start.
type Spec struct {
	Owner string // taskid.PrincipalDigest of the principal
	// Principal is the caller, for the audit trail of the task's end
	// (Options.Ended): held by the run, never stored.
	Principal string
	VHost     string
	Backend   string
	Tool      string
	// TTL is how long the task is kept once finished (default DefaultTTL).
	TTL time.Duration
	// Changed, when set, is called with the task after each status the
	// run writes (a round opened, working again, settled), on the run's
	// goroutine: it must not block. The router waits on it for a tool's
	// first question (input_before_task).
	Changed func(t store.Task)
	// Run, when set, is what another instance needs to run the task,
	// given the new task's id (Create: kept sealed in the task's record
	// until the run that takes it over starts).
	Run func(id string) ([]byte, error)
	// AnswerWithin, when set, bounds each round's wait for the client's
	// answers: past it the run ends (Step's context with it, so the
	// backend call is cancelled rather than left waiting for a client
	// that is not coming back) and the task fails with Unanswered's
	// message (default ErrUnanswered). A task whose client polls has no
	// need of it; a parked call's client may simply never retry.
	AnswerWithin time.Duration
	Unanswered   error
	// FirstRoundBounded bounds the task's first input round by
	// Options.FirstRoundWithin (kept in the record, so whichever instance
	// runs the task honours it): a tool whose first question is asked
	// before the task is handed out (input_before_task) leaves a client
	// that never answers it without the task's id, to cancel it with.
	FirstRoundBounded bool
}

// Store is what a Runner uses of the shared store: task records, and the
// bus that tells other instances of a task's changes.
type Store interface {
	store.Tasks
	store.Bus
}

// Options configure a Runner.
type Options struct {
	Store Store
	// Lease is how long a run's lease lasts without renewal; a run renews
	// it every third (default DefaultLease).
	Lease time.Duration
	// PerPrincipal bounds an owner's running tasks, fleet-wide (default
	// DefaultPerPrincipal).
	PerPrincipal int
	// PollInterval is the tasks' pollIntervalMs (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// MaxRun bounds a run; past it the task fails (default DefaultMaxRun).
	MaxRun time.Duration
	// FinishedBytes bounds what an owner's finished tasks hold in the
	// store while they are kept (store.TaskLimits; default
	// DefaultFinishedBytes): past it no task starts (ErrBudget), and a
	// result that does not fit fails its task, saying so.
	FinishedBytes int64
	// FirstRoundWithin bounds the first round of a task started with
	// Spec.FirstRoundBounded: the client's wait for a question
	// (streams.client_request_timeout; default DefaultFirstRoundWithin).
	FirstRoundWithin time.Duration
	// Ended, when set, is called with each task this runner settles, as
	// written (once per task, fleet-wide: the write is compare-and-set),
	// on the settling goroutine: it must not block. The audit trail's
	// record of a task's end. Its Principal is the run's; a task settled
	// by an instance that did not run it (its runner's lease lapsed, its
	// launch failed) has none, since the store keeps none.
	Ended  func(t store.Task)
	Logger *slog.Logger
}

// Defaults of Options and Spec.
const (
	DefaultLease        = 10 * time.Second
	DefaultPerPrincipal = 16
	DefaultPollInterval = time.Second
	DefaultMaxRun       = time.Hour
	DefaultTTL          = time.Hour
	// DefaultFinishedBytes is Options.FinishedBytes's default
	// (limits.finished_task_bytes_per_principal).
	DefaultFinishedBytes = 64 << 20
	// DefaultFirstRoundWithin is Options.FirstRoundWithin's default
	// (streams.client_request_timeout).
	DefaultFirstRoundWithin = 5 * time.Minute
)

// Errors of Runner's methods.
var (
	// ErrLimit: the owner runs as many tasks as it may.
	ErrLimit = errors.New("taskrun: too many running tasks")
	// ErrBudget: the owner's finished tasks hold as much as they may
	// (Options.FinishedBytes) until some expire.
	ErrBudget = errors.New("taskrun: the caller's finished tasks hold their budget")
	// ErrUnknown: no such task (never created, expired, another owner's).
	ErrUnknown = errors.New("taskrun: unknown task")
	// ErrClosed: the runner is shutting down and starts no task.
	ErrClosed = errors.New("taskrun: runner closed")
)

// Why a run's context ended.
var (
	errCancelled = errors.New("the client cancelled the task")
	errLost      = errors.New("this instance no longer holds the task")
	errMaxRun    = errors.New("the task ran longer than its limit")
	errShutdown  = errors.New("the gateway instance running the task shut down")
)

// LapsedMessage is the statusMessage of a task settled failed because the
// instance running it stopped renewing its lease.
const LapsedMessage = "the gateway instance running the task stopped (its lease lapsed)"

// Runner starts and serves tasks on one instance.
type Runner struct {
	opts    Options
	logger  *slog.Logger
	stopSub func()

	mu      sync.Mutex
	running map[string]*run // by owner "\x00" id
	closed  bool
	wg      sync.WaitGroup

	waiters statusWaiters // Answer's callers, woken by status messages (answer.go)
}

type run struct {
	cancel  context.CancelCauseFunc
	wake    chan struct{}    // answers may have arrived
	changed func(store.Task) // Spec.Changed
	// answerWithin and unanswered are Spec.AnswerWithin and Unanswered.
	answerWithin time.Duration
	unanswered   error
}

// New returns a runner. Subscribe subscribes it to the store's bus; Close
// stops it. It fails only without a store.
func New(opts Options) (*Runner, error) {
	if opts.Store == nil {
		return nil, errors.New("taskrun: no store")
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.PerPrincipal <= 0 {
		opts.PerPrincipal = DefaultPerPrincipal
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MaxRun <= 0 {
		opts.MaxRun = DefaultMaxRun
	}
	if opts.FinishedBytes <= 0 {
		opts.FinishedBytes = DefaultFinishedBytes
	}
	if opts.FirstRoundWithin <= 0 {
		opts.FirstRoundWithin = DefaultFirstRoundWithin
	}
	r := &Runner{opts: opts, logger: opts.Logger, running: map[string]*run{}}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// PerPrincipal is the bound on an owner's running tasks in force
// (Options.PerPrincipal), for refusals to name.
func (r *Runner) PerPrincipal() int { return r.opts.PerPrincipal }

// FinishedBytes is the budget of an owner's finished tasks in force
// (Options.FinishedBytes), for refusals to name.
func (r *Runner) FinishedBytes() int64 { return r.opts.FinishedBytes }

// Subscribe subscribes the runner to the store's bus, for the answers and
// cancels of the tasks it runs, waiting at most until ctx ends. An error
// (the store did not confirm in time) leaves the subscription coming up in
// the background; meanwhile runs find answers and cancels by polling the
// record, at a third of the lease.
func (r *Runner) Subscribe(ctx context.Context) error {
	stop, err := r.opts.Store.Subscribe(ctx, r.onBus)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		stop()
		return nil
	}
	r.stopSub = stop
	return err
}

// Close ends every run of this instance: each settles failed, naming the
// shutdown, and Close waits for them.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	for _, rn := range r.running {
		rn.cancel(errShutdown)
	}
	stop := r.stopSub
	r.mu.Unlock()
	r.wg.Wait()
	if stop != nil {
		stop()
	}
}

func runKey(owner, id string) string { return owner + "\x00" + id }

// onBus wakes the local run a message is for. It must not block.
func (r *Runner) onBus(m store.BusMessage) {
	if owner, id, ok := StatusChanged(m); ok {
		r.waiters.changed(owner, id)
		return
	}
	if m.Kind != store.BusTaskAnswer && m.Kind != store.BusTaskCancel {
		return
	}
	var owner string
	if json.Unmarshal(m.Data, &owner) != nil {
		return
	}
	r.mu.Lock()
	rn := r.running[runKey(owner, m.ID)]
	r.mu.Unlock()
	if rn == nil {
		return
	}
	if m.Kind == store.BusTaskCancel {
		rn.cancel(errCancelled)
	}
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

func busMessage(kind, owner, id string) store.BusMessage {
	data, _ := json.Marshal(owner)
	return store.BusMessage{Kind: kind, ID: id, Data: data}
}

// Start creates a task for spec and runs step for it on this instance. It
// returns once the task is in the store. ErrLimit past the owner's bound.
func (r *Runner) Start(ctx context.Context, spec Spec, step Step) (*store.Task, error) {
	t, err := r.create(ctx, spec, r.opts.Store.InstanceID(), r.opts.Lease)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancelCause(context.Background())
	rn := r.register(t, cancel, spec)
	created := *t
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.unregister(t, cancel)
		r.drive(runCtx, rn, t, step, nil)
	}()
	return &created, nil
}

// create stores a new working task for spec, held by runner for lease.
func (r *Runner) create(ctx context.Context, spec Spec, runner string, lease time.Duration) (*store.Task, error) {
	t, err := r.newTask(spec, runner)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if spec.Run != nil {
		run, err := spec.Run(t.ID)
		if err != nil {
			return nil, err
		}
		t.Run = run
	}
	if err := r.store(ctx, t, spec, lease); err != nil {
		return nil, err
	}
	return t, nil
}

// newTask is a new working task for spec, held by runner, not yet stored.
func (r *Runner) newTask(spec Spec, runner string) (*store.Task, error) {
	if spec.TTL <= 0 {
		spec.TTL = DefaultTTL
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	t := &store.Task{ID: hex.EncodeToString(b[:]), Owner: spec.Owner, Principal: spec.Principal, VHost: spec.VHost,
		Backend: spec.Backend, Tool: spec.Tool, Status: store.TaskWorking, CreatedAt: now, UpdatedAt: now, TTL: spec.TTL,
		PollInterval: r.opts.PollInterval, Runner: runner}
	if spec.FirstRoundBounded {
		t.FirstRoundWithin = r.opts.FirstRoundWithin
	}
	return t, nil
}

// store creates t in the store, within the owner's bounds (ErrLimit,
// ErrBudget).
func (r *Runner) store(ctx context.Context, t *store.Task, spec Spec, lease time.Duration) error {
	limits := store.TaskLimits{Running: r.opts.PerPrincipal, FinishedBytes: r.opts.FinishedBytes}
	err := r.opts.Store.CreateTask(ctx, t, limits, lease, r.opts.MaxRun+t.TTL+r.opts.Lease+lease)
	switch {
	case errors.Is(err, store.ErrTaskLimit):
		return ErrLimit
	case errors.Is(err, store.ErrTaskBudget):
		return ErrBudget
	}
	return err
}

// register makes t's run known to the bus handler (answers, cancels).
func (r *Runner) register(t *store.Task, cancel context.CancelCauseFunc, spec Spec) *run {
	rn := &run{cancel: cancel, wake: make(chan struct{}, 1), changed: spec.Changed,
		answerWithin: spec.AnswerWithin, unanswered: spec.Unanswered}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		cancel(errShutdown)
		return rn
	}
	r.running[runKey(t.Owner, t.ID)] = rn
	return rn
}

func (r *Runner) unregister(t *store.Task, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	delete(r.running, runKey(t.Owner, t.ID))
	r.mu.Unlock()
	cancel(nil)
}

// drive runs the task to its end. t is this run's copy of the record,
// whose Version follows its own writes. issued, when set, maps the keys
// of t's open round (opened before the run began: StartOnInput) to the
// step's own: the run waits for its answers before it steps.
func (r *Runner) drive(ctx context.Context, rn *run, t *store.Task, step Step, issued map[string]string) {
	cancel := rn.cancel
	maxRun := time.AfterFunc(r.opts.MaxRun, func() { cancel(errMaxRun) })
	defer maxRun.Stop()
	var keep sync.WaitGroup
	keepCtx, stopKeep := context.WithCancel(ctx)
	keep.Go(func() { r.keepLease(keepCtx, t.Owner, t.ID, cancel) })
	defer func() { stopKeep(); keep.Wait() }()

	var answers map[string]json.RawMessage
	if issued != nil {
		if answers = r.await(ctx, rn, t, issued); answers == nil {
			r.ended(rn, t, context.Cause(ctx))
			return
		}
	}
	for {
		out, err := step(ctx, answers)
		if ctx.Err() != nil {
			r.ended(rn, t, context.Cause(ctx))
			return
		}
		switch {
		case err != nil:
			var rpc *RPCError
			if !errors.As(err, &rpc) {
				rpc = &RPCError{Code: -32603, Message: err.Error()}
			}
			r.settle(rn, t, store.TaskFailed, "the tool failed: "+rpc.Message, nil, rpc)
			return
		case len(out.InputRequests) == 0:
			r.complete(rn, t, out)
			return
		case len(out.InputRequests) > store.MaxTaskInputs:
			rpc := tooManyInputs(len(out.InputRequests))
			r.settle(rn, t, store.TaskFailed, rpc.Message, nil, rpc)
			return
		}
		answers = r.round(ctx, rn, t, out.InputRequests)
		if answers == nil {
			r.ended(rn, t, context.Cause(ctx))
			return
		}
	}
}

// tooManyInputs is the error of a round larger than a task may hold.
// complete settles a run whose call answered: completed with what the
// task keeps of the answer, failed when it cannot be kept.
func (r *Runner) complete(rn *run, t *store.Task, out Outcome) {
	result, err := out.kept()
	if err != nil {
		rpc := &RPCError{Code: -32603, Message: "the answer cannot be kept: " + err.Error()}
		r.settle(rn, t, store.TaskFailed, rpc.Message, nil, rpc)
		return
	}
	r.settle(rn, t, store.TaskCompleted, "", result, nil)
}

func tooManyInputs(n int) *RPCError {
	return &RPCError{Code: -32603, Message: fmt.Sprintf("the backend asked for %d inputs at once, more than %d", n, store.MaxTaskInputs)}
}

// keepLease renews the run's lease every third of it, and checks the
// record for a cancel (in case its bus message was lost), until ctx ends.
func (r *Runner) keepLease(ctx context.Context, owner, id string, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(r.opts.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ok, err := r.opts.Store.RenewTaskLease(ctx, owner, id, r.opts.Store.InstanceID(), r.opts.Lease)
		if ctx.Err() != nil {
			return
		}
		if err != nil || !ok {
			r.logger.Warn("task lease lost", "task", id, "err", err)
			cancel(errLost)
			return
		}
		if t, err := r.opts.Store.LoadTask(ctx, owner, id); err == nil && t.CancelRequested {
			cancel(errCancelled)
			return
		}
	}
}

// StatusChanged decodes a bus message announcing that a task changed
// status (store.BusTaskStatus): a listen stream of owner that asked for
// id loads it (Get) and sends it as notifications/tasks.
func StatusChanged(m store.BusMessage) (owner, id string, ok bool) {
	if m.Kind != store.BusTaskStatus || json.Unmarshal(m.Data, &owner) != nil || owner == "" || m.ID == "" {
		return "", "", false
	}
	return owner, m.ID, true
}

// Get returns owner's task id, settling it failed first when its run's
// lease has lapsed (exactly one instance does). ErrUnknown when absent.
func (r *Runner) Get(ctx context.Context, owner, id string) (*store.Task, error) {
	for range 3 {
		t, err := r.opts.Store.LoadTask(ctx, owner, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrUnknown
		}
		if err != nil || store.TaskTerminal(t.Status) || !t.LeaseLapsed {
			return t, err
		}
		msg := LapsedMessage
		if strings.HasPrefix(t.Runner, placeholderPrefix) {
			msg = NotStartedMessage
		}
		setEnd(t, store.TaskFailed, msg, nil, &RPCError{Code: -32603, Message: msg})
		t.Run = nil
		t.UpdatedAt = time.Now().UTC()
		ok, err := r.opts.Store.UpdateTask(ctx, t)
		if err != nil {
			return nil, err
		}
		if ok {
			r.announce(ctx, t)
			r.finished(t)
			return t, nil
		}
	}
	return nil, errors.New("taskrun: the task kept changing")
}

// Update posts the client's answers (keys not outstanding are ignored).
func (r *Runner) Update(ctx context.Context, owner, id string, responses map[string]json.RawMessage) error {
	_, _, err := r.opts.Store.PostTaskAnswers(ctx, owner, id, responses, busMessage(store.BusTaskAnswer, owner, id))
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknown
	}
	return err
}

// Cancel asks the task's run, wherever it is, to stop; a finished task is
// left as it is.
func (r *Runner) Cancel(ctx context.Context, owner, id string) error {
	t, err := r.Get(ctx, owner, id)
	if err != nil || store.TaskTerminal(t.Status) {
		return err
	}
	err = r.opts.Store.RequestTaskCancel(ctx, owner, id, busMessage(store.BusTaskCancel, owner, id))
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnknown
	}
	return err
}
