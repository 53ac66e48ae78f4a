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
func (r *Redis) AppendEvent(ctx context.Context, id string, data []byte, maxLen int, ttl time.Duration) (string, error) {
	return r.AppendStreamEvent(ctx, id, "", data, maxLen, ttl)
}

// AppendStreamEvent adds the stream tag as the entry's "s" field.
func (r *Redis) AppendStreamEvent(ctx context.Context, id, stream string, data []byte, maxLen int, ttl time.Duration) (string, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	if maxLen < 1 {
		return "", fmt.Errorf("store: append event: maxLen %d must be at least 1", maxLen)
	}
	keys := []string{SessionKey(r.prefix, id), EventsKey(r.prefix, id)}
	eventID, err := appendEvent.Run(ctx, r.client, keys, maxLen, ttl.Milliseconds(), data, stream).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: append event: %w", err)
	}
	return eventID, nil
}

// EventsAfter runs XRANGE with an exclusive start, so the event named by
// eventID itself is not returned. An id older than the oldest retained
// event returns everything retained; a missing session or log returns no
// events and no error. limit < 1 means no limit (the log is bounded anyway).
// A malformed eventID is ErrBadEventID, without a Redis call.
func (r *Redis) EventsAfter(ctx context.Context, id, eventID string, limit int) ([]Event, error) {
	start, err := parseEventID(eventID)
	if err != nil {
		return nil, err
	}
	if start.ms == math.MaxUint64 && start.seq == math.MaxUint64 {
		return []Event{}, nil // nothing can follow; Redis rejects "(" on it
	}
	key, from := EventsKey(r.prefix, id), "("+start.String()
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
		events = append(events, Event{ID: m.ID, Data: []byte(d), Stream: s})
	}
	return events, nil
}

// LatestEventID reads the newest entry's id with XREVRANGE ... COUNT 1.
func (r *Redis) LatestEventID(ctx context.Context, id string) (string, error) {
	msgs, err := r.client.XRevRangeN(ctx, EventsKey(r.prefix, id), "+", "-", 1).Result()
	if err != nil {
		return "", fmt.Errorf("store: latest event: %w", err)
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// ClaimStream runs SET key owner PX ttl GET in a script that first checks
// the session exists, so a claim is never created for a deleted session
// (ErrNotFound).
func (r *Redis) ClaimStream(ctx context.Context, id, owner string, ttl time.Duration) (string, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	keys := []string{SessionKey(r.prefix, id), StreamKey(r.prefix, id)}
	prev, err := claimStream.Run(ctx, r.client, keys, owner, ttl.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: claim stream: %w", err)
	}
	return prev, nil
}

// RefreshStream extends the claim's TTL if owner still holds it.
func (r *Redis) RefreshStream(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := refreshStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: refresh stream: %w", err)
	}
	return n == 1, nil
}

// ReleaseStream deletes the claim if owner still holds it; otherwise (taken
// over, expired, never claimed) it does nothing.
func (r *Redis) ReleaseStream(ctx context.Context, id, owner string) error {
	if err := releaseStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner).Err(); err != nil {
		return fmt.Errorf("store: release stream: %w", err)
	}
	return nil
}

var (
	// KEYS: session hash, events stream; ARGV: maxLen, ttl ms, data.
	// Returns the entry id, or nil when the session is absent.
	appendEvent = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local id
if ARGV[4] == '' then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3])
else
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '=', ARGV[1], '*', 'd', ARGV[3], 's', ARGV[4])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return id`)
	// KEYS: session hash, claim; ARGV: owner, ttl ms. Returns the previous
	// owner ("" if none), or nil when the session is absent.
	claimStream = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local prev = redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'GET')
if prev then return prev end
return ''`)
	// KEYS: claim; ARGV: owner, ttl ms.
	refreshStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)
	// KEYS: claim; ARGV: owner.
	releaseStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`)
)
