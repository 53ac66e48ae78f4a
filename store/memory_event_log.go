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
	stream CallStreamID
	// requestID (a call stream's first event) and answer (its last): see
	// call_streams.go.
	requestID []byte
	answer    bool
}

// AppendEvent appends a copy of data and keeps the newest maxLen events.
// Event ids are "<unixMillis>-<seq>", like Redis stream ids, strictly
// increasing across every log of the store (also when the clock steps back).
func (m *Memory) AppendEvent(ctx context.Context, id SessionID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
	return m.AppendStreamEvent(ctx, id, "", data, maxLen, ttl)
}

// AppendStreamEvent is AppendEvent with the event tagged as stream's.
func (m *Memory) AppendStreamEvent(_ context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
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
func (m *Memory) appendLocked(id SessionID, e memEvent, maxLen int, ttl time.Duration) (EventID, error) {
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
	return next.id(), nil
}

// EventsAfter returns copies of the events after eventID (exclusive),
// oldest first. As on Redis: an id older than the oldest retained event
// returns everything retained, a missing session or log returns no events
// and no error, limit < 1 means no limit, and a malformed eventID is
// ErrBadEventID.
func (m *Memory) EventsAfter(_ context.Context, id SessionID, eventID EventID, limit int) ([]Event, error) {
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
		events = append(events, Event{ID: e.id.id(), Data: bytes.Clone(e.data), Stream: e.stream})
	}
	return events, nil
}

// LatestEventID returns the newest event's id, or "0-0".
func (m *Memory) LatestEventID(_ context.Context, id SessionID) (EventID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errClosed
	}
	l := m.liveLog(id, time.Now())
	if l == nil || len(l.events) == 0 {
		return "0-0", nil
	}
	return l.events[len(l.events)-1].id.id(), nil
}

// liveLog returns session id's log if it has not expired at now, dropping
// it if it has. Called with m.mu held.
func (m *Memory) liveLog(id SessionID, now time.Time) *memLog {
	return live(m.logs, id, now, func(l *memLog) time.Time { return l.expires })
}

// StartCallStream logs the event (with the request id) and takes the
// lease, under one lock.
func (m *Memory) StartCallStream(_ context.Context, id SessionID, stream CallStreamID, requestID, data []byte, maxLen int, leaseTTL, ttl time.Duration) (EventID, error) {
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

// EndCallStream logs the answer, flagged, and drops the lease.
func (m *Memory) EndCallStream(_ context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error) {
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
func (m *Memory) CallStreamEventsAfter(_ context.Context, id SessionID, stream CallStreamID, eventID EventID, limit int) (*CallStream, []Event, error) {
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
	newest, found := EventID(""), false
	var events []Event
	if l := m.liveLog(id, now); l != nil && len(l.events) > 0 {
		newest = l.events[len(l.events)-1].id.id()
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
				events = append(events, Event{ID: e.id.id(), Data: bytes.Clone(e.data), Stream: stream})
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
