package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// AppendEvent XADDs data to the session's stream (EventsKey) and refreshes
// the stream's TTL, in one script that first checks the session exists.
// The returned id is the stream entry id ("<unixMillis>-<seq>").
//
// Trimming is exact (MAXLEN = maxLen), so the log never holds more than
// maxLen events. In steady state each append evicts a single entry from the
// head listpack node (at most stream-node-max-entries entries), a small
// bounded cost for the log sizes SSE resumption needs; approximate trimming
// (~) would only save that while letting the log overshoot by up to a node.
func (r *Redis) AppendEvent(ctx context.Context, id SessionID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
	return r.AppendStreamEvent(ctx, id, "", data, maxLen, ttl)
}

// AppendStreamEvent adds the stream tag as the entry's "s" field.
func (r *Redis) AppendStreamEvent(ctx context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	if maxLen < 1 {
		return "", fmt.Errorf("store: append event: maxLen %d must be at least 1", maxLen)
	}
	keys := []string{SessionKey(r.prefix, id), EventsKey(r.prefix, id)}
	eventID, err := appendEvent.Run(ctx, r.client, keys, maxLen, ttl.Milliseconds(), data, string(stream)).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: append event: %w", err)
	}
	return EventID(eventID), nil
}

// KEYS: session hash, events stream; ARGV: maxLen, ttl ms, data, stream
// tag (empty for the GET stream).
// Returns the entry id, or nil when the session is absent.
var appendEvent = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local id
if ARGV[4] == '' then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3])
else
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3], 's', ARGV[4])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id`)

// EventsAfter runs XRANGE with an exclusive start, so the event named by
// eventID itself is not returned. An id older than the oldest retained
// event returns everything retained; a missing session or log returns no
// events and no error. limit < 1 means no limit (the log is bounded anyway).
// A malformed eventID is ErrBadEventID, without a Redis call.
func (r *Redis) EventsAfter(ctx context.Context, id SessionID, eventID EventID, limit int) ([]Event, error) {
	start, err := parseEventID(eventID)
	if err != nil {
		return nil, err
	}
	if start.ms == math.MaxUint64 && start.seq == math.MaxUint64 {
		return []Event{}, nil // nothing can follow; Redis rejects "(" on it
	}
	key, from := EventsKey(r.prefix, id), "("+string(start.id())
	var msgs []redis.XMessage
	if limit > 0 {
		msgs, err = r.client.XRangeN(ctx, key, from, "+", int64(limit)).Result()
	} else {
		msgs, err = r.client.XRange(ctx, key, from, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("store: events after %s: %w", eventID, err)
	}
	events := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		d, _ := m.Values["d"].(string)
		s, _ := m.Values["s"].(string)
		events = append(events, Event{ID: EventID(m.ID), Data: []byte(d), Stream: CallStreamID(s)})
	}
	return events, nil
}

// LatestEventID reads the newest entry's id with XREVRANGE ... COUNT 1.
func (r *Redis) LatestEventID(ctx context.Context, id SessionID) (EventID, error) {
	msgs, err := r.client.XRevRangeN(ctx, EventsKey(r.prefix, id), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("store: latest event: %w", err)
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return EventID(msgs[0].ID), nil
}

// Log entry fields of call streams, beside d (data) and s (stream):
// r holds the request id on a stream's first event, a marks its answer.

// StartCallStream runs XADD (with the request id) and the lease's SET in
// one script that first checks the session exists.
func (r *Redis) StartCallStream(ctx context.Context, id SessionID, stream CallStreamID, requestID, data []byte, maxLen int, leaseTTL, ttl time.Duration) (EventID, error) {
	if err := checkCallStream(stream, maxLen, ttl); err != nil {
		return "", err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return "", err
	}
	keys := []string{SessionKey(r.prefix, id), EventsKey(r.prefix, id), CallLeaseKey(r.prefix, id, stream)}
	eventID, err := startCallStream.Run(ctx, r.client, keys, maxLen, ttl.Milliseconds(), data, string(stream),
		requestID, leaseTTL.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: start call stream: %w", err)
	}
	return EventID(eventID), nil
}

// KEYS: session, events, lease; ARGV: maxLen, ttl ms, data, stream,
// request id, lease ms. The entry id, or nil without a session.
var startCallStream = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3], 's', ARGV[4], 'r', ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], '1', 'PX', ARGV[6])
return id`)

// EndCallStream XADDs the answer, flagged, and deletes the lease in one script.
func (r *Redis) EndCallStream(ctx context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
	if err := checkCallStream(stream, maxLen, ttl); err != nil {
		return "", err
	}
	keys := []string{SessionKey(r.prefix, id), EventsKey(r.prefix, id), CallLeaseKey(r.prefix, id, stream)}
	eventID, err := endCallStream.Run(ctx, r.client, keys, maxLen, ttl.Milliseconds(), data, string(stream)).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: end call stream: %w", err)
	}
	return EventID(eventID), nil
}

// KEYS: session, events, lease; ARGV: maxLen, ttl ms, data, stream.
var endCallStream = redis.NewScript(`
redis.call('DEL', KEYS[3])
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3], 's', ARGV[4], 'a', '1')
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id`)

// CallStreamEventsAfter checks the lease and scans the log in one script.
func (r *Redis) CallStreamEventsAfter(ctx context.Context, id SessionID, stream CallStreamID, eventID EventID, limit int) (*CallStream, []Event, error) {
	after, err := parseEventID(eventID)
	if err != nil {
		return nil, nil, err
	}
	if stream == "" || len(stream) > maxCallStreamName {
		return nil, nil, ErrNotFound
	}
	if after.ms == math.MaxUint64 && after.seq == math.MaxUint64 {
		return nil, nil, ErrBadEventID // nothing can follow it, so the log never issued it
	}
	keys := []string{CallLeaseKey(r.prefix, id, stream), EventsKey(r.prefix, id)}
	raw, err := callStreamEvents.Run(ctx, r.client, keys, string(after.id()), string(stream)).Slice()
	if err != nil {
		return nil, nil, fmt.Errorf("store: call stream events: %w", err)
	}
	if len(raw) != 6 {
		return nil, nil, fmt.Errorf("store: call stream events: unexpected reply of %d parts", len(raw))
	}
	leased, _ := raw[0].(int64)
	newest, _ := raw[1].(string)
	found, _ := raw[2].(int64)
	reqID, _ := raw[3].(string)
	done, _ := raw[4].(int64)
	if err := checkResumeID(eventID, EventID(newest), time.Now()); err != nil {
		return nil, nil, err
	}
	if found == 0 {
		return nil, nil, ErrNotFound
	}
	cs := &CallStream{Leased: leased == 1, Done: done == 1}
	if reqID != "" {
		cs.RequestID = []byte(reqID)
	}
	flat, _ := raw[5].([]any)
	events := make([]Event, 0, len(flat)/2)
	for i := 0; i+1 < len(flat) && (limit < 1 || len(events) < limit); i += 2 {
		eid, _ := flat[i].(string)
		data, _ := flat[i+1].(string)
		events = append(events, Event{ID: EventID(eid), Data: []byte(data), Stream: stream})
	}
	return cs, events, nil
}

// KEYS: lease, events; ARGV: after (exclusive), stream. Returns
// {leased, newest id, stream found, request id, answer logged,
// {id, data, ...} of the stream's events after ARGV[1]}. The lease is
// read before the log: see call_streams.go.
var callStreamEvents = redis.NewScript(`
local leased = redis.call('EXISTS', KEYS[1])
local newest = ''
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then newest = last[1][1] end
local function fields(e)
  local f, m = e[2], {}
  for i = 1, #f, 2 do m[f[i]] = f[i+1] end
  return m
end
local found, reqid, done, out = 0, '', 0, {}
for _, e in ipairs(redis.call('XRANGE', KEYS[2], '-', '+')) do
  local m = fields(e)
  if m['s'] == ARGV[2] then
    found = 1
    if m['r'] then reqid = m['r'] end
    if m['a'] then done = 1 end
  end
end
if found == 1 then
  for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(' .. ARGV[1], '+')) do
    local m = fields(e)
    if m['s'] == ARGV[2] then
      out[#out+1] = e[1]
      out[#out+1] = m['d'] or ''
    end
  end
end
return {leased, newest, found, reqid, done, out}`)
