package store

import (
	"bytes"
	"context"
	"maps"
	"time"
)

// StartCallStream logs the event (with the request id) and takes the
// lease, under one lock.
func (m *Memory) StartCallStream(_ context.Context, id, stream string, requestID, data []byte, maxLen int, leaseTTL, ttl time.Duration) (string, error) {
	if err := checkCallStream(stream, maxLen, ttl); err != nil {
		return "", err
	}
	if err := checkTTL(leaseTTL); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	eventID, err := m.appendLocked(id, memEvent{stream: stream, data: data, requestID: bytes.Clone(requestID)}, maxLen, ttl)
	if err != nil {
		return "", err
	}
	if m.leases == nil {
		m.leases = make(map[string]time.Time)
	}
	m.leases[leaseSlot(id, stream)] = time.Now().Add(leaseTTL)
	return eventID, nil
}

// RenewCallLease extends a live lease.
func (m *Memory) RenewCallLease(_ context.Context, id, stream string, leaseTTL time.Duration) (bool, error) {
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

// EndCallStream logs the answer, flagged, and drops the lease.
func (m *Memory) EndCallStream(_ context.Context, id, stream string, data []byte, maxLen int, ttl time.Duration) (string, error) {
	if err := checkCallStream(stream, maxLen, ttl); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.leases, leaseSlot(id, stream))
	return m.appendLocked(id, memEvent{stream: stream, data: data, answer: true}, maxLen, ttl)
}

// CallStreamEventsAfter returns what is known of the stream and its events
// after eventID.
func (m *Memory) CallStreamEventsAfter(_ context.Context, id, stream, eventID string, limit int) (*CallStream, []Event, error) {
	after, err := parseEventID(eventID)
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, errClosed
	}
	now := time.Now()
	cs := &CallStream{Leased: m.leasedLocked(id, stream, now)}
	newest, found := "", false
	var events []Event
	if l := m.liveLog(id, now); l != nil && len(l.events) > 0 {
		newest = l.events[len(l.events)-1].id.String()
		for _, e := range l.events {
			if e.stream != stream {
				continue
			}
			found = true
			if e.requestID != nil {
				cs.RequestID = bytes.Clone(e.requestID)
			}
			cs.Done = cs.Done || e.answer
			if e.id.after(after) && (limit < 1 || len(events) < limit) {
				events = append(events, Event{ID: e.id.String(), Data: bytes.Clone(e.data), Stream: stream})
			}
		}
	}
	if err := checkResumeID(eventID, newest, now); err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, ErrNotFound
	}
	return cs, events, nil
}

// leasedLocked reports whether a stream's lease is live. Called with m.mu held.
func (m *Memory) leasedLocked(id, stream string, now time.Time) bool {
	until, ok := m.leases[leaseSlot(id, stream)]
	return ok && now.Before(until)
}

func leaseSlot(id, stream string) string { return id + "\x00" + stream }

// purgeLeases drops lapsed leases. Called with m.mu held.
func (m *Memory) purgeLeases(now time.Time) {
	maps.DeleteFunc(m.leases, func(_ string, until time.Time) bool { return !now.Before(until) })
}
