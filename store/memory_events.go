package store

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"
)

// memLog is a session's event log; like the Redis stream it has its own
// expiry, refreshed by each append.
type memLog struct {
	events  []memEvent
	expires time.Time
}

type memEvent struct {
	id     eventID
	data   []byte
	stream string
	// requestID (a call stream's first event) and answer (its last): see
	// call_streams.go.
	requestID []byte
	answer    bool
}

// memClaim is the holder of a session's GET stream.
type memClaim struct {
	owner   string
	expires time.Time
}

// AppendEvent appends a copy of data and keeps the newest maxLen events.
// Event ids are "<unixMillis>-<seq>", like Redis stream ids, strictly
// increasing across every log of the store (also when the clock steps back).
func (m *Memory) AppendEvent(ctx context.Context, id string, data []byte, maxLen int, ttl time.Duration) (string, error) {
	return m.AppendStreamEvent(ctx, id, "", data, maxLen, ttl)
}

// AppendStreamEvent is AppendEvent with the event tagged as stream's.
func (m *Memory) AppendStreamEvent(_ context.Context, id, stream string, data []byte, maxLen int, ttl time.Duration) (string, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	if maxLen < 1 {
		return "", fmt.Errorf("store: append event: maxLen %d must be at least 1", maxLen)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.appendLocked(id, memEvent{stream: stream, data: data}, maxLen, ttl)
}

// appendLocked appends e (its id assigned here, its data copied) with m.mu held.
func (m *Memory) appendLocked(id string, e memEvent, maxLen int, ttl time.Duration) (string, error) {
	e.data = bytes.Clone(e.data)
	if m.closed {
		return "", errClosed
	}
	now := time.Now()
	if m.liveSession(id, now) == nil {
		return "", ErrNotFound
	}
	l := m.liveLog(id, now)
	if l == nil {
		l = &memLog{}
		m.logs[id] = l
	}
	next := eventID{ms: uint64(max(now.UnixMilli(), 0))}
	if !next.after(m.lastID) {
		next = eventID{ms: m.lastID.ms, seq: m.lastID.seq + 1}
	}
	m.lastID = next
	e.id = next
	l.events = append(l.events, e)
	if drop := len(l.events) - maxLen; drop > 0 {
		clear(l.events[:drop]) // let the dropped data be collected
		l.events = l.events[drop:]
	}
	l.expires = now.Add(ttl)
	return next.String(), nil
}

// EventsAfter returns copies of the events after eventID (exclusive),
// oldest first. As on Redis: an id older than the oldest retained event
// returns everything retained, a missing session or log returns no events
// and no error, limit < 1 means no limit, and a malformed eventID is
// ErrBadEventID.
func (m *Memory) EventsAfter(_ context.Context, id, eventID string, limit int) ([]Event, error) {
	start, err := parseEventID(eventID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	events := []Event{}
	l := m.liveLog(id, time.Now())
	if l == nil {
		return events, nil
	}
	// Ids increase along the log: skip to the first one after start.
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].id.after(start) })
	for _, e := range l.events[i:] {
		if limit > 0 && len(events) == limit {
			break
		}
		events = append(events, Event{ID: e.id.String(), Data: bytes.Clone(e.data), Stream: e.stream})
	}
	return events, nil
}

// LatestEventID returns the newest event's id, or "0-0".
func (m *Memory) LatestEventID(_ context.Context, id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errClosed
	}
	l := m.liveLog(id, time.Now())
	if l == nil || len(l.events) == 0 {
		return "0-0", nil
	}
	return l.events[len(l.events)-1].id.String(), nil
}

// ClaimStream makes owner the holder for ttl and returns the previous live
// holder. ErrNotFound if the session is absent.
func (m *Memory) ClaimStream(_ context.Context, id, owner string, ttl time.Duration) (string, error) {
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
func (m *Memory) RefreshStream(_ context.Context, id, owner string, ttl time.Duration) (bool, error) {
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
func (m *Memory) ReleaseStream(_ context.Context, id, owner string) error {
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

// liveLog and liveClaim return the entry for id if it has not expired at
// now, dropping it if it has. Called with m.mu held.
func (m *Memory) liveLog(id string, now time.Time) *memLog {
	return live(m.logs, id, now, func(l *memLog) time.Time { return l.expires })
}

func (m *Memory) liveClaim(id string, now time.Time) *memClaim {
	return live(m.claims, id, now, func(c *memClaim) time.Time { return c.expires })
}
