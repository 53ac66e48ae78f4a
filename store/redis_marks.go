package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MarkCancelled sets the c:<reqID> field to the mark's expiry (Unix µs:
// fine enough to keep marks in order), refreshes the session TTL and
// PUBLISHes msg (From set to InstanceID) in one script, so the mark and the
// broadcast are atomic. Redis 7.0 has no expiry per hash field, so the
// script itself drops the session's expired marks, and the oldest live
// ones past MaxCancelMarks, before adding one; readers ignore a mark whose
// time has passed (decodeSession). An id over MaxCancelIDBytes is only
// published. On a missing session it publishes nothing and returns
// ErrNotFound.
func (r *Redis) MarkCancelled(ctx context.Context, id SessionID, reqID string, msg BusMessage, markTTL, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := checkTTL(markTTL); err != nil {
		return err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: mark cancelled: %w", err)
	}
	field := ""
	if markable(reqID) {
		field = prefixCancel + reqID
	}
	now := time.Now()
	ok, err := markCancelled.Run(ctx, r.client, []string{SessionKey(r.prefix, id)},
		ttl.Milliseconds(), field, BusChannel(r.prefix), payload,
		now.UnixMicro(), now.Add(markTTL).UnixMicro(), MaxCancelMarks).Int()
	if err != nil {
		return fmt.Errorf("store: mark cancelled: %w", err)
	}
	if ok == 0 {
		return ErrNotFound
	}
	return nil
}

// markCancelled: KEYS[1] session hash; ARGV: ttl ms, field (empty: publish
// only), channel, message, now (Unix µs), the mark's expiry (Unix µs), the
// most live marks a session keeps. The session's marks are read with
// HSCAN MATCH into a table (which also drops the duplicates SCAN may
// return); the hash is small, since everything in it is bounded. A mark
// from before marks expired holds "1", which reads as long expired.
var markCancelled = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' then
  local now, marks, cursor = tonumber(ARGV[5]), {}, '0'
  repeat
    local page = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', 'c:*', 'COUNT', 128)
    cursor = page[1]
    for i = 1, #page[2], 2 do marks[page[2][i]] = tonumber(page[2][i + 1]) or 0 end
  until cursor == '0'
  marks[ARGV[2]] = nil
  local live, drop = {}, {}
  for field, expires in pairs(marks) do
    if expires > now then live[#live + 1] = {field, expires} else drop[#drop + 1] = field end
  end
  local keep = tonumber(ARGV[7]) - 1
  if #live > keep then
    table.sort(live, function(a, b) return a[2] < b[2] end)
    for i = 1, #live - keep do drop[#drop + 1] = live[i][1] end
  end
  for i = 1, #drop, 512 do
    redis.call('HDEL', KEYS[1], unpack(drop, i, math.min(i + 511, #drop)))
  end
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[6])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`)

// ClearCancelled deletes the c:<reqID> field. HDEL never creates a key, so
// it cannot resurrect a session; a missing session or mark is not an error.
// The TTL is left alone.
func (r *Redis) ClearCancelled(ctx context.Context, id SessionID, reqID string) error {
	if err := r.client.HDel(ctx, SessionKey(r.prefix, id), prefixCancel+reqID).Err(); err != nil {
		return fmt.Errorf("store: clear cancelled: %w", err)
	}
	return nil
}

// AddPending sets p:<requestID> = instance. ErrNotFound if the session is absent.
func (r *Redis) AddPending(ctx context.Context, id SessionID, requestID ServerRequestID, instance string, ttl time.Duration) error {
	return r.update(ctx, "add pending", hsetIfExists, id, ttl, prefixPending+string(requestID), instance)
}

// RemovePending deletes p:<requestID> and a stored answer, like
// ClearCancelled: a missing session or entry is not an error, and the TTL
// is left alone.
func (r *Redis) RemovePending(ctx context.Context, id SessionID, requestID ServerRequestID) error {
	if err := r.client.HDel(ctx, SessionKey(r.prefix, id), prefixPending+string(requestID), prefixAnswer+string(requestID)).Err(); err != nil {
		return fmt.Errorf("store: remove pending: %w", err)
	}
	return nil
}

// PostAnswer sets a:<requestID>, refreshes the TTL and PUBLISHes msg in one
// script, only while p:<requestID> exists.
func (r *Redis) PostAnswer(ctx context.Context, id SessionID, requestID ServerRequestID, data []byte, msg BusMessage, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	payload, err := r.encodeBus(msg)
	if err != nil {
		return fmt.Errorf("store: post answer: %w", err)
	}
	ok, err := postAnswer.Run(ctx, r.client, []string{SessionKey(r.prefix, id)}, ttl.Milliseconds(),
		prefixPending+string(requestID), prefixAnswer+string(requestID), data, BusChannel(r.prefix), payload).Int()
	if err != nil {
		return fmt.Errorf("store: post answer: %w", err)
	}
	if ok == 0 {
		return ErrNotFound
	}
	return nil
}

// postAnswer: KEYS[1] session; ARGV ttl, p:<id>, a:<id>, answer,
// channel, bus payload.
var postAnswer = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1`)

// TakeAnswer gets and deletes a:<requestID> in one script.
func (r *Redis) TakeAnswer(ctx context.Context, id SessionID, requestID ServerRequestID) ([]byte, error) {
	v, err := takeField.Run(ctx, r.client, []string{SessionKey(r.prefix, id)}, prefixAnswer+string(requestID)).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("store: take answer: %w", err)
	}
	return []byte(v), nil
}

// takeField: KEYS[1] session; ARGV[1] the field. Returns its value, if
// any, and deletes it.
var takeField = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v`)
