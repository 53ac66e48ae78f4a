package tasksbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// Task statuses (SEP-2663).
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

func terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// task is one task's state; every field is guarded by Server.mu.
type task struct {
	id            string
	tool          string
	status        string
	statusMessage string
	createdAt     time.Time
	updatedAt     time.Time
	// inputRequests are the round's requests not answered yet; answers
	// holds the answers of the round so far. The round ends (answered is
	// closed) when inputRequests is empty.
	inputRequests map[string]json.RawMessage
	answers       map[string]json.RawMessage
	answered      chan struct{}
	nextKey       int // keys are unique over the task's life
	result        json.RawMessage
	err           *rpcError
	cancel        context.CancelFunc
}

// errCancelled is what a run's ask returns once the task was cancelled.
var errCancelled = errors.New("task cancelled")

// detail is the task's DetailedTask: the Task fields and, by status,
// inputRequests, result or error. Called with s.mu held.
func (s *Server) detail(t *task) map[string]any {
	d := map[string]any{
		"taskId":         t.id,
		"status":         t.status,
		"createdAt":      t.createdAt.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  t.updatedAt.UTC().Format(time.RFC3339Nano),
		"ttlMs":          s.opts.TTL.Milliseconds(),
		"pollIntervalMs": s.opts.PollInterval.Milliseconds(),
	}
	if t.statusMessage != "" {
		d["statusMessage"] = t.statusMessage
	}
	switch t.status {
	case StatusInputRequired:
		d["inputRequests"] = maps.Clone(t.inputRequests)
	case StatusCompleted:
		d["result"] = t.result
	case StatusFailed:
		d["error"] = t.err
	}
	return d
}

// newTaskID returns 128 random bits, hex: unguessable, as the SEP requires.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// createTask stores a new working task for tool and starts run on it; it
// returns the CreateTaskResult once the task is in the map, so a tasks/get
// right after it resolves (durable creation).
func (s *Server) createTask(tool string, run func(ctx context.Context, t *task) (json.RawMessage, error)) (map[string]any, error) {
	now := time.Now()
	ctx, cancel := context.WithCancel(s.base)
	t := &task{id: newTaskID(), tool: tool, status: StatusWorking, createdAt: now, updatedAt: now, cancel: cancel}
	s.mu.Lock()
	s.expireLocked(now)
	if len(s.tasks) >= s.opts.MaxTasks {
		s.mu.Unlock()
		cancel()
		return nil, errorf(wire.CodeInternalError, "too many tasks (%d)", s.opts.MaxTasks)
	}
	s.tasks[t.id] = t
	res := s.detail(t)
	s.runs.Add(1)
	s.mu.Unlock()
	res["resultType"] = "task"
	res["_meta"] = map[string]any{metaServerInfo: serverInfo}
	s.logger.Info("task created", "task", t.id, "tool", tool)
	go func() {
		defer s.runs.Done()
		defer cancel()
		result, err := run(ctx, t)
		s.settle(ctx, t, result, err)
	}()
	return res, nil
}

// settle moves a run's task to its terminal status: cancelled when its
// context was cancelled (tasks/cancel), failed on a protocol error,
// completed with the result otherwise (a tool error is a result with
// isError). A task already terminal stays as it is.
func (s *Server) settle(ctx context.Context, t *task, result json.RawMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if terminal(t.status) {
		return
	}
	var rerr *rpcError
	switch {
	case ctx.Err() != nil:
		t.status, t.statusMessage = StatusCancelled, "cancelled at the client's request"
	case errors.As(err, &rerr):
		t.status, t.err, t.statusMessage = StatusFailed, rerr, "the tool failed: "+rerr.Message
	case err != nil:
		t.status, t.err, t.statusMessage = StatusFailed, errorf(wire.CodeInternalError, "%v", err), "the tool failed: "+err.Error()
	default:
		t.status, t.result, t.statusMessage = StatusCompleted, result, ""
	}
	t.inputRequests = nil
	t.updatedAt = time.Now()
	s.notifyLocked(t)
	s.logger.Info("task settled", "task", t.id, "status", t.status)
}

// ask puts the task in input_required with requests (key → request) and
// waits until every one is answered, returning the answers by key; keys
// are made unique over the task's life by prefixing them with a round
// number. errCancelled once the task is cancelled.
func (s *Server) ask(ctx context.Context, t *task, requests map[string]any) (map[string]json.RawMessage, error) {
	s.mu.Lock()
	t.nextKey++
	round := t.nextKey
	t.inputRequests = map[string]json.RawMessage{}
	names := map[string]string{} // issued key → the tool's own key
	for k, req := range requests {
		b, err := json.Marshal(req)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		issued := k + "-" + itoa(round)
		t.inputRequests[issued] = b
		names[issued] = k
	}
	t.answers = map[string]json.RawMessage{}
	answered := make(chan struct{})
	t.answered = answered
	t.status, t.statusMessage, t.updatedAt = StatusInputRequired, "waiting for the client's input", time.Now()
	s.notifyLocked(t)
	s.mu.Unlock()

	select {
	case <-ctx.Done():
		return nil, errCancelled
	case <-answered:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]json.RawMessage{}
	for issued, a := range t.answers {
		out[names[issued]] = a
	}
	t.answers = nil
	return out, nil
}

// lookup returns the live task id, or -32602.
func (s *Server) lookupLocked(id string) (*task, error) {
	s.expireLocked(time.Now())
	t := s.tasks[id]
	if t == nil {
		return nil, errorf(wire.CodeInvalidParams, "Failed to retrieve task: Task not found")
	}
	return t, nil
}

// expireLocked forgets the tasks whose TTL, counted from creation, has
// passed, cancelling those still running.
func (s *Server) expireLocked(now time.Time) {
	for id, t := range s.tasks {
		if now.Sub(t.createdAt) > s.opts.TTL {
			t.cancel()
			delete(s.tasks, id)
		}
	}
}

// taskID reads params.taskId, after checking the extension was declared.
func taskID(c *call) (string, error) {
	if !c.tasks {
		return "", missingTasks(c.method)
	}
	var id string
	if raw, ok := c.params["taskId"]; !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", errorf(wire.CodeInvalidParams, "params.taskId must be a non-empty string")
	}
	return id, nil
}

// getTask serves tasks/get: the DetailedTask, resultType "complete".
func (s *Server) getTask(c *call) (any, error) {
	id, err := taskID(c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	return complete(s.detail(t)), nil
}

// updateTask serves tasks/update: answers to keys now outstanding are held
// (and those keys leave inputRequests); once none is left the run resumes.
// Other keys are ignored. The ack is empty.
func (s *Server) updateTask(c *call) (any, error) {
	id, err := taskID(c)
	if err != nil {
		return nil, err
	}
	var responses map[string]json.RawMessage
	if raw, ok := c.params["inputResponses"]; !ok || json.Unmarshal(raw, &responses) != nil || responses == nil {
		return nil, errorf(wire.CodeInvalidParams, "params.inputResponses must be an object")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	if t.status == StatusInputRequired {
		for k, v := range responses {
			if _, outstanding := t.inputRequests[k]; outstanding {
				t.answers[k] = v
				delete(t.inputRequests, k)
			}
		}
		t.updatedAt = time.Now()
		if len(t.inputRequests) == 0 {
			t.status, t.statusMessage = StatusWorking, ""
			close(t.answered)
		}
		s.notifyLocked(t)
	}
	return complete(map[string]any{}), nil
}

// cancelTask serves tasks/cancel: the run's context is cancelled, and the
// run settles the task cancelled. A terminal task is left alone; the ack
// is the same empty result either way.
func (s *Server) cancelTask(c *call) (any, error) {
	id, err := taskID(c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	t, err := s.lookupLocked(id)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	t.cancel()
	return complete(map[string]any{}), nil
}

// Task returns a snapshot of task id's DetailedTask (nil when unknown), for
// tests that check the fixture's side.
func (s *Server) Task(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[id]
	if t == nil {
		return nil
	}
	return s.detail(t)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
