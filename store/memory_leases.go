package store

import (
	"context"
	"maps"
	"time"
)

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
