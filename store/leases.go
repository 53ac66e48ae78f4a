package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/redis/go-redis/v9"
)

// Leases are short-lived claims that one instance is doing something for a
// session, so the others can tell it is still alive: the holder of the
// session's GET stream (only one instance streams a session; a new GET
// anywhere takes over and the old holder is told on the bus), and the
// instance running a call answered as a stream (whose lease is taken with
// the call stream's first event, see StartCallStream and call_streams.go).
// A lease lapses unless its holder renews it, so a dead instance gives it
// up by itself. The router's GET-stream holds (ClaimStream, RefreshStream,
// ReleaseStream) and its resumable calls (RenewCallLease) need it.
type Leases interface {
	// ClaimStream makes owner the holder of the session's GET stream for
	// ttl and returns the previous holder ("" if none). ErrNotFound if the
	// session is absent.
	ClaimStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (previous string, err error)
	// RefreshStream extends the claim if owner still holds it.
	RefreshStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (held bool, err error)
	// ReleaseStream drops the claim if owner still holds it.
	ReleaseStream(ctx context.Context, id SessionID, owner string) error
	// RenewCallLease extends the stream's lease; false when it has lapsed
	// or the stream has ended: a resume may already have given up on it.
	RenewCallLease(ctx context.Context, id SessionID, stream CallStreamID, leaseTTL time.Duration) (bool, error)
}

// memClaim is the holder of a session's GET stream.
type memClaim struct {
	owner   string
	expires time.Time
}

// ClaimStream makes owner the holder for ttl and returns the previous live
// holder. ErrNotFound if the session is absent.
func (m *Memory) ClaimStream(_ context.Context, id SessionID, owner string, ttl time.Duration) (string, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errClosed
	}
	now := time.Now()
	if m.liveSession(id, now) == nil {
		return "", ErrNotFound
	}
	var prev string
	if c := m.liveClaim(id, now); c != nil {
		prev = c.owner
	}
	m.claims[id] = &memClaim{owner: owner, expires: now.Add(ttl)}
	return prev, nil
}

// RefreshStream extends the claim if owner still holds it.
func (m *Memory) RefreshStream(_ context.Context, id SessionID, owner string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, errClosed
	}
	now := time.Now()
	c := m.liveClaim(id, now)
	if c == nil || c.owner != owner {
		return false, nil
	}
	c.expires = now.Add(ttl)
	return true, nil
}

// ReleaseStream drops the claim if owner still holds it.
func (m *Memory) ReleaseStream(_ context.Context, id SessionID, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	if c := m.liveClaim(id, time.Now()); c != nil && c.owner == owner {
		delete(m.claims, id)
	}
	return nil
}

// liveClaim returns session id's GET-stream claim if it has not expired
// at now, dropping it if it has. Called with m.mu held.
func (m *Memory) liveClaim(id SessionID, now time.Time) *memClaim {
	return live(m.claims, id, now, func(c *memClaim) time.Time { return c.expires })
}

// RenewCallLease extends a live lease.
func (m *Memory) RenewCallLease(_ context.Context, id SessionID, stream CallStreamID, leaseTTL time.Duration) (bool, error) {
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, errClosed
	}
	now := time.Now()
	if !m.leasedLocked(id, stream, now) {
		return false, nil
	}
	m.leases[leaseSlot(id, stream)] = now.Add(leaseTTL)
	return true, nil
}

// leasedLocked reports whether a stream's lease is live. Called with m.mu held.
func (m *Memory) leasedLocked(id SessionID, stream CallStreamID, now time.Time) bool {
	until, ok := m.leases[leaseSlot(id, stream)]
	return ok && now.Before(until)
}

func leaseSlot(id SessionID, stream CallStreamID) string { return string(id) + "\x00" + string(stream) }

// purgeLeases drops lapsed leases. Called with m.mu held.
func (m *Memory) purgeLeases(now time.Time) {
	maps.DeleteFunc(m.leases, func(_ string, until time.Time) bool { return !now.Before(until) })
}

// ClaimStream runs SET key owner PX ttl GET in a script that first checks
// the session exists, so a claim is never created for a deleted session
// (ErrNotFound).
func (r *Redis) ClaimStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (string, error) {
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

// KEYS: session hash, claim; ARGV: owner, ttl ms. Returns the previous
// owner ("" if none), or nil when the session is absent.
var claimStream = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local prev = redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'GET')
if prev then return prev end
return ''`)

// RefreshStream extends the claim's TTL if owner still holds it.
func (r *Redis) RefreshStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := refreshStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: refresh stream: %w", err)
	}
	return n == 1, nil
}

// KEYS: claim; ARGV: owner, ttl ms.
var refreshStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// ReleaseStream deletes the claim if owner still holds it; otherwise (taken
// over, expired, never claimed) it does nothing.
func (r *Redis) ReleaseStream(ctx context.Context, id SessionID, owner string) error {
	if err := releaseStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner).Err(); err != nil {
		return fmt.Errorf("store: release stream: %w", err)
	}
	return nil
}

// KEYS: claim; ARGV: owner.
var releaseStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`)

// RenewCallLease is PEXPIRE on the lease: it never revives a lapsed one.
func (r *Redis) RenewCallLease(ctx context.Context, id SessionID, stream CallStreamID, leaseTTL time.Duration) (bool, error) {
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	ok, err := r.client.PExpire(ctx, CallLeaseKey(r.prefix, id, stream), leaseTTL).Result()
	if err != nil {
		return false, fmt.Errorf("store: renew call lease: %w", err)
	}
	return ok, nil
}
