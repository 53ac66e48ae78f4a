package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"
)

// Tasks keeps the tasks the gateway runs itself (SEP-2663, for backends
// without the extension): any instance answers tasks/get, tasks/update and
// tasks/cancel for a task another instance runs.
//
// A task belongs to an owner (a digest of the principal, which the sealed
// task id also carries, so every call names it) and lives in the owner's
// own keyspace (one Redis Cluster slot per owner), which is what makes the
// fleet-wide bounds on an owner's tasks atomic with creating one.
//
//   - CreateTask stores a working task with its runner's lease, when the
//     owner runs fewer than TaskLimits.Running tasks (a task counts while
//     its lease is live, so one whose instance died stops counting when
//     its lease lapses) and its finished tasks hold less than
//     TaskLimits.FinishedBytes.
//   - UpdateTask is compare-and-set on Task.Version: of two instances that
//     both try to settle a task (the runner finishing, another settling a
//     task whose lease lapsed), exactly one succeeds. A terminal status
//     ends the lease and keeps the record Task.TTL longer, for tasks/get;
//     the record's size is charged to the owner's finished bytes while it
//     is kept, and a result that would take them past the budget the task
//     was created under is refused (ErrTaskBudget).
//   - RenewTaskLease extends the runner's lease; it fails once the lease
//     has lapsed or the task has been settled, and the runner stops.
//   - PostTaskAnswers holds the client's answers to the current round's
//     input requests (partial answers too) and publishes a bus message in
//     the same step, so the runner either receives it or finds the answers
//     when it loads the task (as Marks.PostAnswer does for sessions).
//   - RequestTaskCancel records a cancel and publishes its message likewise.
//
// The clock of leases and expiries is the store's.
type Tasks interface {
	// CreateTask stores t (Version 1, with t.Runner's lease for leaseTTL)
	// for life at most, unless t.Owner already runs limits.Running live
	// tasks (ErrTaskLimit), its finished tasks already hold
	// limits.FinishedBytes or more (ErrTaskBudget), or t.ID exists
	// (ErrTaskExists). The keys of t.InputRequests, if any, are its first
	// round. The task keeps limits.FinishedBytes as the budget its end is
	// checked against (UpdateTask).
	CreateTask(ctx context.Context, t *Task, limits TaskLimits, leaseTTL, life time.Duration) error
	// LoadTask returns the task with what the store keeps beside the record:
	// Version, Answers, CancelRequested, Runner and LeaseLapsed.
	// ErrNotFound when absent or expired.
	LoadTask(ctx context.Context, owner, id string) (*Task, error)
	// UpdateTask writes t when the stored version is still t.Version and
	// reports whether it did (false: another instance changed it first;
	// reload). It sets t.Version to the new version. A t.Round other than
	// the stored one starts a new round: the held answers are dropped and
	// the keys of t.InputRequests are the ones outstanding. A terminal
	// t.Status drops the lease and the answers and keeps the task t.TTL,
	// charging TaskCharge(record) to the owner's finished bytes for as
	// long; when t has a Result and the charge would take them past the
	// task's budget (CreateTask), nothing is written: ErrTaskBudget. A
	// terminal write without a Result (failed, cancelled: small) is
	// charged but never refused, so a task can always end.
	// ErrNotFound when absent.
	UpdateTask(ctx context.Context, t *Task) (ok bool, err error)
	// RenewTaskLease extends instance's lease on task id by leaseTTL. false
	// when the lease is not instance's, has lapsed, or the task is settled
	// or gone: the runner must stop.
	RenewTaskLease(ctx context.Context, owner, id, instance string, leaseTTL time.Duration) (bool, error)
	// TakeTaskLease hands the lease of task id from runner from to runner
	// to, for leaseTTL, whether or not from's lease has lapsed, as long as
	// the task is not settled and from still holds it (a placeholder
	// runner: the instance that created the task for another to run). It
	// reports whether it did; exactly one of concurrent takers does.
	TakeTaskLease(ctx context.Context, owner, id, from, to string, leaseTTL time.Duration) (bool, error)
	// PostTaskAnswers holds the answers whose keys are outstanding in the
	// current round (others are ignored) and, when it took any, publishes
	// msg in the same step. It returns how many it took and how many keys
	// remain outstanding. ErrNotFound when absent.
	PostTaskAnswers(ctx context.Context, owner, id string, answers map[string]json.RawMessage, msg BusMessage) (took, remaining int, err error)
	// RequestTaskCancel records that the client cancelled task id and
	// publishes msg in the same step. ErrNotFound when absent.
	RequestTaskCancel(ctx context.Context, owner, id string, msg BusMessage) error
}

// Bus message kinds of Tasks; ID is the task id, Data the owner.
const (
	// BusTaskAnswer: answers to task ID's input requests were posted.
	BusTaskAnswer = "task-answer"
	// BusTaskCancel: the client cancelled task ID.
	BusTaskCancel = "task-cancel"
	// BusTaskStatus: task ID changed status (a round opened, it settled);
	// instances holding listen streams for it send notifications/tasks.
	BusTaskStatus = "task-status"
)

// Task statuses (SEP-2663).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// TaskTerminal reports whether status is final.
func TaskTerminal(status string) bool {
	return status == TaskCompleted || status == TaskFailed || status == TaskCancelled
}

// TaskLimits bound what one owner's tasks may hold (CreateTask).
type TaskLimits struct {
	// Running bounds the owner's live tasks (those whose lease is live).
	Running int
	// FinishedBytes bounds what the owner's finished tasks hold while they
	// are kept (TaskCharge of each record); 0: no bound.
	FinishedBytes int64
}

// TaskOverhead is what a finished task is charged beyond its record's
// JSON: the keys and entries the store keeps for it.
const TaskOverhead = 512

// TaskCharge is what a finished task whose record encodes to n bytes is
// charged against its owner's TaskLimits.FinishedBytes.
func TaskCharge(n int) int64 { return int64(n) + TaskOverhead }

var (
	// ErrTaskLimit: the owner runs as many tasks as it may.
	ErrTaskLimit = errors.New("store: too many running tasks")
	// ErrTaskBudget: the owner's finished tasks hold as much as they may.
	ErrTaskBudget = errors.New("store: the owner's finished tasks hold their budget")
	// ErrTaskExists: a task with that id exists already.
	ErrTaskExists = errors.New("store: task exists")
)

// Task is one gateway-run task.
type Task struct {
	ID    string `json:"id"`
	Owner string `json:"owner"` // a digest of the principal
	VHost string `json:"vhost"`
	// Backend and Tool are the backend key and the backend's own tool
	// name the task calls.
	Backend string `json:"backend"`
	Tool    string `json:"tool"`

	Status        string        `json:"status"`
	StatusMessage string        `json:"statusMessage,omitempty"`
	CreatedAt     time.Time     `json:"createdAt"`
	UpdatedAt     time.Time     `json:"updatedAt"`
	TTL           time.Duration `json:"ttl"`          // kept this long once terminal
	PollInterval  time.Duration `json:"pollInterval"` // pollIntervalMs

	// FirstRoundWithin, when set, bounds how long the first input round
	// waits for its answers (a round its client may never have learnt the
	// task of); past it the run ends and the task fails.
	FirstRoundWithin time.Duration `json:"firstRoundWithin,omitempty"`

	// Round numbers the input rounds; InputRequests are the current
	// round's requests, by key (keys unique over the task's life).
	Round         int                        `json:"round,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	// Result (completed) or Error (failed, a JSON-RPC error object).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// Run is what another instance needs to run the task's call, sealed
	// by whoever created the task (opaque here): set at creation when the
	// creator does not run the task itself, dropped by the run that took
	// it over.
	Run []byte `json:"run,omitempty"`

	// Principal is the caller the task runs for, as the audit trail names
	// it: known to the instance that creates or runs the task, never
	// stored (the store names callers by digest only).
	Principal string `json:"-"`

	// Kept by the store beside the record: set by LoadTask, never written
	// from here (Runner is written by CreateTask).
	Version         int64                      `json:"-"`
	Answers         map[string]json.RawMessage `json:"-"` // this round's answers so far
	CancelRequested bool                       `json:"-"`
	Runner          string                     `json:"-"` // instance holding the lease
	LeaseLapsed     bool                       `json:"-"` // not terminal, and nobody holds it
}

// Outstanding returns the current round's requests not answered yet.
func (t *Task) Outstanding() map[string]json.RawMessage {
	out := maps.Clone(t.InputRequests)
	for k := range t.Answers {
		delete(out, k)
	}
	return out
}

// maxTaskName bounds owners, ids, runners and input keys, so a caller
// cannot grow keys.
const maxTaskName = 200

// MaxTaskInputs bounds the input requests of one round, so a task's hash
// stays small (the scripts walk its fields).
const MaxTaskInputs = 64

func checkTaskNames(names ...string) error {
	for _, n := range names {
		if n == "" || len(n) > maxTaskName {
			return fmt.Errorf("store: task owner, id, runner and input keys must be 1 to %d bytes", maxTaskName)
		}
	}
	return nil
}

func checkTask(t *Task) error {
	if t == nil {
		return errors.New("store: nil task")
	}
	if err := checkTaskNames(t.Owner, t.ID); err != nil {
		return err
	}
	if len(t.InputRequests) > MaxTaskInputs {
		return fmt.Errorf("store: %d input requests in one round, at most %d", len(t.InputRequests), MaxTaskInputs)
	}
	for k := range t.InputRequests {
		if err := checkTaskNames(k); err != nil {
			return err
		}
	}
	if TaskTerminal(t.Status) {
		return checkTTL(t.TTL)
	}
	return nil
}

// checkNewTask checks CreateTask's arguments.
func checkNewTask(t *Task, limits TaskLimits, leaseTTL, life time.Duration) error {
	if err := checkTask(t); err != nil {
		return err
	}
	if limits.Running < 1 || limits.FinishedBytes < 0 {
		return fmt.Errorf("store: task limits %+v: at least one running task, and no negative budget", limits)
	}
	if err := checkTaskNames(t.Runner); err != nil {
		return err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return err
	}
	return checkTTL(life)
}
