package store

import (
	"context"
	"encoding/json"
	"maps"
	"time"
)

// memTask is a stored task: the record as written, and what the store
// keeps beside it.
type memTask struct {
	rec         []byte // the Task as JSON
	version     int64
	round       int
	outstanding map[string]bool
	answers     map[string]json.RawMessage
	cancel      bool
	runner      string    // "" once terminal
	lease       time.Time // the runner's lease ends
	expires     time.Time
	budget      int64 // TaskLimits.FinishedBytes at creation
	done        bool  // terminal: charge counts against the owner's budget until expires
	charge      int64
}

// finishedBytes is what owner's finished tasks are charged by now,
// leaving out skip. Called with m.taskMu held.
func (m *Memory) finishedBytes(owner, skip string, now time.Time) int64 {
	var sum int64
	for id, t := range m.tasks[owner] {
		if t.done && id != skip && t.expires.After(now) {
			sum += t.charge
		}
	}
	return sum
}

// liveTask returns owner's task id unless it has expired. Called with
// m.taskMu held.
func (m *Memory) liveTask(owner, id string, now time.Time) *memTask {
	return live(m.tasks[owner], id, now, func(t *memTask) time.Time { return t.expires })
}

// CreateTask implements Tasks.
func (m *Memory) CreateTask(_ context.Context, t *Task, limits TaskLimits, leaseTTL, life time.Duration) error {
	if err := checkNewTask(t, limits, leaseTTL, life); err != nil {
		return err
	}
	rec, err := json.Marshal(t)
	if err != nil {
		return err
	}
	now := time.Now()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	if m.liveTask(t.Owner, t.ID, now) != nil {
		return ErrTaskExists
	}
	running := 0
	for _, other := range m.tasks[t.Owner] {
		if other.runner != "" && other.lease.After(now) && other.expires.After(now) {
			running++
		}
	}
	if running >= limits.Running {
		return ErrTaskLimit
	}
	if limits.FinishedBytes > 0 && m.finishedBytes(t.Owner, "", now) >= limits.FinishedBytes {
		return ErrTaskBudget
	}
	if m.tasks == nil {
		m.tasks = map[string]map[string]*memTask{}
	}
	if m.tasks[t.Owner] == nil {
		m.tasks[t.Owner] = map[string]*memTask{}
	}
	mt := &memTask{rec: rec, version: 1, round: t.Round, outstanding: map[string]bool{},
		runner: t.Runner, lease: now.Add(leaseTTL), expires: now.Add(life), budget: limits.FinishedBytes}
	for k := range t.InputRequests {
		mt.outstanding[k] = true
	}
	m.tasks[t.Owner][t.ID] = mt
	t.Version = 1
	return nil
}

// LoadTask implements Tasks.
func (m *Memory) LoadTask(_ context.Context, owner, id string) (*Task, error) {
	if err := checkTaskNames(owner, id); err != nil {
		return nil, err
	}
	now := time.Now()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	mt := m.liveTask(owner, id, now)
	if mt == nil {
		return nil, ErrNotFound
	}
	var t Task
	if err := json.Unmarshal(mt.rec, &t); err != nil {
		return nil, err
	}
	t.Version = mt.version
	t.Answers = maps.Clone(mt.answers)
	t.CancelRequested = mt.cancel
	t.Runner = mt.runner
	t.LeaseLapsed = mt.runner != "" && !mt.lease.After(now)
	return &t, nil
}

// UpdateTask implements Tasks.
func (m *Memory) UpdateTask(_ context.Context, t *Task) (bool, error) {
	if err := checkTask(t); err != nil {
		return false, err
	}
	rec, err := json.Marshal(t)
	if err != nil {
		return false, err
	}
	now := time.Now()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	mt := m.liveTask(t.Owner, t.ID, now)
	switch {
	case mt == nil:
		return false, ErrNotFound
	case mt.version != t.Version:
		return false, nil
	}
	done := TaskTerminal(t.Status)
	charge := TaskCharge(len(rec))
	if done && len(t.Result) > 0 && mt.budget > 0 && m.finishedBytes(t.Owner, t.ID, now)+charge > mt.budget {
		return false, ErrTaskBudget
	}
	mt.rec = rec
	mt.version++
	t.Version = mt.version
	if done || t.Round != mt.round {
		mt.round, mt.answers, mt.outstanding = t.Round, nil, map[string]bool{}
		if !done {
			for k := range t.InputRequests {
				mt.outstanding[k] = true
			}
		}
	}
	if done {
		mt.runner, mt.lease = "", time.Time{}
		mt.expires = now.Add(t.TTL)
		mt.done, mt.charge = true, charge
	}
	return true, nil
}

// RenewTaskLease implements Tasks.
func (m *Memory) RenewTaskLease(_ context.Context, owner, id, instance string, leaseTTL time.Duration) (bool, error) {
	if err := checkTaskNames(owner, id, instance); err != nil {
		return false, err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	now := time.Now()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	mt := m.liveTask(owner, id, now)
	if mt == nil || mt.runner != instance || !mt.lease.After(now) {
		return false, nil
	}
	mt.lease = now.Add(leaseTTL)
	return true, nil
}

// TakeTaskLease implements Tasks.
func (m *Memory) TakeTaskLease(_ context.Context, owner, id, from, to string, leaseTTL time.Duration) (bool, error) {
	if err := checkTaskNames(owner, id, from, to); err != nil {
		return false, err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	now := time.Now()
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	mt := m.liveTask(owner, id, now)
	if mt == nil || mt.runner == "" || mt.runner != from {
		return false, nil
	}
	mt.runner, mt.lease = to, now.Add(leaseTTL)
	return true, nil
}

// PostTaskAnswers implements Tasks: the answers are held under the lock,
// and the message is published after it, so a runner that loads the task
// on receiving it finds them.
func (m *Memory) PostTaskAnswers(ctx context.Context, owner, id string, answers map[string]json.RawMessage, msg BusMessage) (int, int, error) {
	if err := checkTaskNames(owner, id); err != nil {
		return 0, 0, err
	}
	m.taskMu.Lock()
	mt := m.liveTask(owner, id, time.Now())
	if mt == nil {
		m.taskMu.Unlock()
		return 0, 0, ErrNotFound
	}
	took := 0
	for k, v := range answers {
		if mt.outstanding[k] {
			delete(mt.outstanding, k)
			if mt.answers == nil {
				mt.answers = map[string]json.RawMessage{}
			}
			mt.answers[k] = append(json.RawMessage(nil), v...)
			took++
		}
	}
	remaining := len(mt.outstanding)
	m.taskMu.Unlock()
	if took > 0 {
		if err := m.Publish(ctx, msg); err != nil {
			return took, remaining, err
		}
	}
	return took, remaining, nil
}

// RequestTaskCancel implements Tasks, publishing after the mark as
// PostTaskAnswers does.
func (m *Memory) RequestTaskCancel(ctx context.Context, owner, id string, msg BusMessage) error {
	if err := checkTaskNames(owner, id); err != nil {
		return err
	}
	m.taskMu.Lock()
	mt := m.liveTask(owner, id, time.Now())
	if mt != nil {
		mt.cancel = true
	}
	m.taskMu.Unlock()
	if mt == nil {
		return ErrNotFound
	}
	return m.Publish(ctx, msg)
}

// purgeTasks drops the tasks that have expired by now.
func (m *Memory) purgeTasks(now time.Time) {
	m.taskMu.Lock()
	defer m.taskMu.Unlock()
	for owner, tasks := range m.tasks {
		maps.DeleteFunc(tasks, func(_ string, t *memTask) bool { return !now.Before(t.expires) })
		if len(tasks) == 0 {
			delete(m.tasks, owner)
		}
	}
}
