package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The task layout: every key of one owner carries the {tasks:<owner>}
// hash tag, so creating a task and counting the owner's running ones is
// one script in one Cluster slot.
//
// A task is a hash: v (version), rec (the Task as JSON, opaque to the
// scripts), r (round), q:<key> per outstanding input key, qn (how many),
// a:<key> per held answer, cancel, runner and lease (the runner's lease
// end, ms on the server's clock; both gone once terminal), budget (the
// owner's finished bytes it was created under). The owner's live set is a
// sorted set of task ids scored by lease end. Its finished tasks are
// accounted in three more keys that expire together: the done set (ids by
// the end of their keeping), the charges (a hash, id to bytes) and their
// sum (a counter); expired ids are subtracted as they are found.

// TaskKey is the Redis hash of owner's task id.
func TaskKey(prefix, owner, id string) string {
	return prefix + ":{tasks:" + owner + "}:task:" + id
}

// TasksLiveKey is the sorted set of owner's running tasks by lease end.
func TasksLiveKey(prefix, owner string) string {
	return prefix + ":{tasks:" + owner + "}:live"
}

// TasksDoneKey is the sorted set of owner's finished tasks by the end of
// their keeping; TasksChargesKey the hash of what each is charged, and
// TasksBytesKey their sum.
func TasksDoneKey(prefix, owner string) string {
	return prefix + ":{tasks:" + owner + "}:done"
}

// TasksChargesKey: see TasksDoneKey.
func TasksChargesKey(prefix, owner string) string {
	return prefix + ":{tasks:" + owner + "}:charges"
}

// TasksBytesKey: see TasksDoneKey.
func TasksBytesKey(prefix, owner string) string {
	return prefix + ":{tasks:" + owner + "}:bytes"
}

// taskKeys are the keys of owner's task id the scripts take: the task,
// the live set, then the finished accounting (done, charges, bytes).
func (r *Redis) taskKeys(owner, id string) []string {
	return []string{TaskKey(r.prefix, owner, id), TasksLiveKey(r.prefix, owner),
		TasksDoneKey(r.prefix, owner), TasksChargesKey(r.prefix, owner), TasksBytesKey(r.prefix, owner)}
}

// redisNow is the Lua preamble reading the server's clock in ms.
const redisNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// redisTrimLive keeps the live set's TTL at its latest lease.
const redisTrimLive = `
local function trimlive(key, now)
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #last > 0 then redis.call('PEXPIRE', key, math.max(1, tonumber(last[2]) - now)) end
end
`

// redisTrimDone subtracts the owner's finished tasks whose keeping has
// ended (a bounded batch per call: a later call takes the rest, and until
// then the sum only errs high), and keeps the three keys' TTL at the
// latest end. KEYS[3] done, KEYS[4] charges, KEYS[5] bytes.
const redisTrimDone = `
local function trimdone(now)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 256)
  local freed = 0
  for _, id in ipairs(gone) do
    freed = freed + tonumber(redis.call('HGET', KEYS[4], id) or '0')
    redis.call('HDEL', KEYS[4], id)
    redis.call('ZREM', KEYS[3], id)
  end
  if freed > 0 then redis.call('DECRBY', KEYS[5], freed) end
end
local function keepdone(now)
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if #last > 0 then
    local ms = math.max(1, tonumber(last[2]) - now)
    for i = 3, 5 do redis.call('PEXPIRE', KEYS[i], ms) end
  end
end
local function finished() return tonumber(redis.call('GET', KEYS[5]) or '0') end
`

// CreateTask implements Tasks in one script.
func (r *Redis) CreateTask(ctx context.Context, t *Task, limits TaskLimits, leaseTTL, life time.Duration) error {
	if err := checkNewTask(t, limits, leaseTTL, life); err != nil {
		return err
	}
	rec, err := json.Marshal(t)
	if err != nil {
		return err
	}
	args := []any{t.ID, limits.Running, leaseTTL.Milliseconds(), life.Milliseconds(), rec, t.Runner, t.Round, limits.FinishedBytes}
	for k := range t.InputRequests {
		args = append(args, k)
	}
	n, err := createTask.Run(ctx, r.client, r.taskKeys(t.Owner, t.ID), args...).Int()
	switch {
	case err != nil:
		return fmt.Errorf("store: create task: %w", err)
	case n == -1:
		return ErrTaskExists
	case n == -2:
		return ErrTaskBudget
	case n == 0:
		return ErrTaskLimit
	}
	t.Version = 1
	return nil
}

// createTask: KEYS task, live, done, charges, bytes; ARGV id, limit,
// lease ms, life ms, rec, runner, round, finished budget, the first
// round's input keys.
var createTask = redis.NewScript(redisNow + redisTrimLive + redisTrimDone + `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
trimdone(now)
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
local budget = tonumber(ARGV[8])
if budget > 0 and finished() >= budget then return -2 end
local lease = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'v', 1, 'rec', ARGV[5], 'runner', ARGV[6], 'lease', lease, 'r', ARGV[7], 'qn', #ARGV - 8, 'budget', budget)
for i = 9, #ARGV do redis.call('HSET', KEYS[1], 'q:' .. ARGV[i], 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], lease, ARGV[1])
trimlive(KEYS[2], now)
return 1`)

// LoadTask implements Tasks: the hash and the server's clock, read in one
// script so that LeaseLapsed is judged on the clock leases are kept in.
func (r *Redis) LoadTask(ctx context.Context, owner, id string) (*Task, error) {
	if err := checkTaskNames(owner, id); err != nil {
		return nil, err
	}
	res, err := loadTask.Run(ctx, r.client, []string{TaskKey(r.prefix, owner, id)}).Slice()
	if err != nil {
		return nil, fmt.Errorf("store: load task: %w", err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("store: load task: unexpected reply %v", res)
	}
	now, _ := res[0].(int64)
	flat, _ := res[1].([]any)
	if len(flat) == 0 {
		return nil, ErrNotFound
	}
	fields := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		fields[k] = v
	}
	var t Task
	if err := json.Unmarshal([]byte(fields["rec"]), &t); err != nil {
		return nil, fmt.Errorf("store: load task: %w", err)
	}
	t.Version, _ = strconv.ParseInt(fields["v"], 10, 64)
	t.CancelRequested = fields["cancel"] != ""
	t.Runner = fields["runner"]
	if t.Runner != "" {
		lease, _ := strconv.ParseInt(fields["lease"], 10, 64)
		t.LeaseLapsed = lease <= now
	}
	for k, v := range fields {
		if key, ok := strings.CutPrefix(k, "a:"); ok {
			if t.Answers == nil {
				t.Answers = map[string]json.RawMessage{}
			}
			t.Answers[key] = json.RawMessage(v)
		}
	}
	return &t, nil
}

var loadTask = redis.NewScript(redisNow + `
return {now, redis.call('HGETALL', KEYS[1])}`)

// UpdateTask implements Tasks: compare-and-set on the version, in one
// script.
func (r *Redis) UpdateTask(ctx context.Context, t *Task) (bool, error) {
	if err := checkTask(t); err != nil {
		return false, err
	}
	rec, err := json.Marshal(t)
	if err != nil {
		return false, err
	}
	done, ttl, result := 0, int64(0), 0
	if TaskTerminal(t.Status) {
		done, ttl = 1, t.TTL.Milliseconds()
	}
	if len(t.Result) > 0 {
		result = 1
	}
	args := []any{t.ID, t.Version, rec, t.Round, done, ttl, TaskCharge(len(rec)), result}
	for k := range t.InputRequests {
		args = append(args, k)
	}
	n, err := updateTask.Run(ctx, r.client, r.taskKeys(t.Owner, t.ID), args...).Int64()
	switch {
	case err != nil:
		return false, fmt.Errorf("store: update task: %w", err)
	case n == -1:
		return false, ErrNotFound
	case n == -2:
		return false, ErrTaskBudget
	case n == 0:
		return false, nil
	}
	t.Version = n
	return true, nil
}

// updateTask: KEYS task, live, done, charges, bytes; ARGV id, expected
// version, rec, round, terminal (1/0), ttl ms once terminal, the record's
// charge, has a result (1/0), the round's input keys. Returns the new
// version, 0 on a version mismatch, -1 when absent, -2 past the budget.
// The hash is small (its input keys are bounded by the caller), so HKEYS
// is fine.
var updateTask = redis.NewScript(redisNow + redisTrimDone + `
local v = redis.call('HGET', KEYS[1], 'v')
if not v then return -1 end
if tonumber(v) ~= tonumber(ARGV[2]) then return 0 end
local done = ARGV[5] == '1'
local charge, was = 0, 0
if done then
  trimdone(now)
  charge = tonumber(ARGV[7])
  was = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
  local budget = tonumber(redis.call('HGET', KEYS[1], 'budget') or '0')
  if ARGV[8] == '1' and budget > 0 and finished() - was + charge > budget then return -2 end
end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', nv, 'rec', ARGV[3])
if done or redis.call('HGET', KEYS[1], 'r') ~= ARGV[4] then
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local p = string.sub(f, 1, 2)
    if p == 'q:' or p == 'a:' then redis.call('HDEL', KEYS[1], f) end
  end
  redis.call('HSET', KEYS[1], 'r', ARGV[4], 'qn', 0)
  if not done then
    for i = 9, #ARGV do redis.call('HSET', KEYS[1], 'q:' .. ARGV[i], 1) end
    redis.call('HSET', KEYS[1], 'qn', #ARGV - 8)
  end
end
if done then
  redis.call('HDEL', KEYS[1], 'runner', 'lease')
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[6]), ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], charge)
  redis.call('INCRBY', KEYS[5], charge - was)
  keepdone(now)
end
return nv`)

// RenewTaskLease implements Tasks.
func (r *Redis) RenewTaskLease(ctx context.Context, owner, id, instance string, leaseTTL time.Duration) (bool, error) {
	if err := checkTaskNames(owner, id, instance); err != nil {
		return false, err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	n, err := renewTaskLease.Run(ctx, r.client, []string{TaskKey(r.prefix, owner, id), TasksLiveKey(r.prefix, owner)},
		id, instance, leaseTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: renew task lease: %w", err)
	}
	return n == 1, nil
}

// renewTaskLease: KEYS task, live; ARGV id, instance, lease ms.
var renewTaskLease = redis.NewScript(redisNow + redisTrimLive + `
local h = redis.call('HMGET', KEYS[1], 'runner', 'lease')
if h[1] ~= ARGV[2] or tonumber(h[2]) <= now then return 0 end
local lease = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lease', lease)
redis.call('ZADD', KEYS[2], lease, ARGV[1])
trimlive(KEYS[2], now)
return 1`)

// TakeTaskLease implements Tasks.
func (r *Redis) TakeTaskLease(ctx context.Context, owner, id, from, to string, leaseTTL time.Duration) (bool, error) {
	if err := checkTaskNames(owner, id, from, to); err != nil {
		return false, err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	n, err := takeTaskLease.Run(ctx, r.client, []string{TaskKey(r.prefix, owner, id), TasksLiveKey(r.prefix, owner)},
		id, from, to, leaseTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: take task lease: %w", err)
	}
	return n == 1, nil
}

// takeTaskLease: KEYS task, live; ARGV id, from, to, lease ms. The runner
// field is gone once the task is settled.
var takeTaskLease = redis.NewScript(redisNow + redisTrimLive + `
if redis.call('HGET', KEYS[1], 'runner') ~= ARGV[2] then return 0 end
local lease = now + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'runner', ARGV[3], 'lease', lease)
redis.call('ZADD', KEYS[2], lease, ARGV[1])
trimlive(KEYS[2], now)
return 1`)

// PostTaskAnswers implements Tasks: the answers are held and the message
// published in one script.
func (r *Redis) PostTaskAnswers(ctx context.Context, owner, id string, answers map[string]json.RawMessage, msg BusMessage) (int, int, error) {
	if err := checkTaskNames(owner, id); err != nil {
		return 0, 0, err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return 0, 0, fmt.Errorf("store: post task answers: %w", err)
	}
	args := []any{BusChannel(r.prefix), payload}
	for k, v := range answers {
		if checkTaskNames(k) != nil {
			continue // never issued: ignored like any other unknown key
		}
		args = append(args, k, []byte(v))
	}
	res, err := postTaskAnswers.Run(ctx, r.client, []string{TaskKey(r.prefix, owner, id)}, args...).Int64Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, 0, ErrNotFound
	case err != nil:
		return 0, 0, fmt.Errorf("store: post task answers: %w", err)
	case len(res) != 2:
		return 0, 0, fmt.Errorf("store: post task answers: unexpected reply %v", res)
	}
	return int(res[0]), int(res[1]), nil
}

// postTaskAnswers: KEYS task; ARGV channel, payload, then key, answer
// pairs. Returns {took, remaining}, or nil when absent.
var postTaskAnswers = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return nil end
local took = 0
for i = 3, #ARGV, 2 do
  if redis.call('HDEL', KEYS[1], 'q:' .. ARGV[i]) == 1 then
    redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1])
    took = took + 1
  end
end
local left = redis.call('HINCRBY', KEYS[1], 'qn', 0 - took) -- never -0, which HINCRBY refuses
if took > 0 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return {took, left}`)

// RequestTaskCancel implements Tasks: the mark and the message in one
// script.
func (r *Redis) RequestTaskCancel(ctx context.Context, owner, id string, msg BusMessage) error {
	if err := checkTaskNames(owner, id); err != nil {
		return err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: request task cancel: %w", err)
	}
	n, err := requestTaskCancel.Run(ctx, r.client, []string{TaskKey(r.prefix, owner, id)}, BusChannel(r.prefix), payload).Int()
	if err != nil {
		return fmt.Errorf("store: request task cancel: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

var requestTaskCancel = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'cancel', 1)
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1`)
