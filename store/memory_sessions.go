package store

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"time"
)

// memSession is a stored session; the record's own Backends,
// Subscriptions, Cancelled and Pending are nil, they live in the maps
// beside it.
type memSession struct {
	record    Session
	backends  map[string]*BackendSnapshot
	subs      map[string]struct{}
	cancelled map[string]time.Time // request id -> when its mark expires
	pending   map[ServerRequestID]string
	answers   map[ServerRequestID][]byte
	expires   time.Time
}

// CreateSession replaces any session with the same ID, dropping its event
// log and stream claim too.
func (m *Memory) CreateSession(_ context.Context, s *Session, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if s == nil || s.ID == "" {
		return errors.New("store: create session: missing session ID")
	}
	if err := checkClientMetadata(s); err != nil {
		return err
	}
	now := time.Now()
	ms := &memSession{
		record:    copyRecord(s),
		backends:  make(map[string]*BackendSnapshot, len(s.Backends)),
		subs:      make(map[string]struct{}, len(s.Subscriptions)),
		cancelled: make(map[string]time.Time, len(s.Cancelled)),
		pending:   maps.Clone(s.Pending),
	}
	if ms.pending == nil {
		ms.pending = make(map[ServerRequestID]string)
	}
	for reqID, ok := range s.Cancelled {
		if ok && markable(reqID) {
			ms.cancelled[reqID] = now.Add(DefaultCancelMarkTTL)
		}
	}
	for k, b := range s.Backends {
		if b != nil {
			ms.backends[k] = copySnapshot(b)
		}
	}
	for _, uri := range s.Subscriptions {
		ms.subs[uri] = struct{}{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	ms.expires = now.Add(ttl)
	m.sessions[s.ID] = ms
	delete(m.logs, s.ID)
	delete(m.claims, s.ID)
	return nil
}

// LoadSession returns a deep copy and pushes the expiry out by ttl.
func (m *Memory) LoadSession(_ context.Context, id SessionID, ttl time.Duration) (*Session, error) {
	var out *Session
	err := m.update(id, ttl, func(ms *memSession) error {
		s := copyRecord(&ms.record)
		s.ID = id
		if len(ms.backends) > 0 {
			s.Backends = make(map[string]*BackendSnapshot, len(ms.backends))
			for k, b := range ms.backends {
				s.Backends[k] = copySnapshot(b)
			}
		}
		s.Subscriptions = slices.Sorted(maps.Keys(ms.subs))
		s.Cancelled = ms.liveMarks(time.Now())
		if len(ms.pending) > 0 {
			s.Pending = maps.Clone(ms.pending)
		}
		out = &s
		return nil
	})
	return out, err
}

// PutBackends replaces the given snapshots, keyed by their Key.
func (m *Memory) PutBackends(_ context.Context, id SessionID, snaps []*BackendSnapshot, ttl time.Duration) error {
	copies := make([]*BackendSnapshot, len(snaps))
	for i, b := range snaps {
		if b == nil {
			return errors.New("store: put backends: nil snapshot")
		}
		copies[i] = copySnapshot(b)
	}
	return m.update(id, ttl, func(ms *memSession) error {
		for _, b := range copies {
			ms.backends[b.Key] = b
		}
		return nil
	})
}

// SetLogLevel records the session's logging level.
func (m *Memory) SetLogLevel(_ context.Context, id SessionID, level string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		ms.record.LogLevel = level
		return nil
	})
}

// AddSubscription records a subscription; adding it twice is a no-op.
func (m *Memory) AddSubscription(_ context.Context, id SessionID, uri string, ttl time.Duration) error {
	if err := checkSubscriptionURI(uri); err != nil {
		return err
	}
	return m.update(id, ttl, func(ms *memSession) error {
		if _, ok := ms.subs[uri]; !ok && len(ms.subs) >= MaxSubscriptions {
			return errTooManySubs
		}
		ms.subs[uri] = struct{}{}
		return nil
	})
}

// RemoveSubscription forgets a subscription; removing an absent one is a no-op.
func (m *Memory) RemoveSubscription(_ context.Context, id SessionID, uri string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		delete(ms.subs, uri)
		return nil
	})
}

// DeleteSession removes the session, its event log and its stream claim.
func (m *Memory) DeleteSession(_ context.Context, id SessionID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	delete(m.logs, id)
	delete(m.claims, id)
	ms, ok := m.sessions[id]
	if !ok {
		return ErrNotFound
	}
	delete(m.sessions, id)
	if !time.Now().Before(ms.expires) {
		return ErrNotFound // it had already expired
	}
	return nil
}

// copyRecord copies the session record without Backends, Subscriptions,
// Cancelled and Pending.
func copyRecord(s *Session) Session {
	c := *s
	c.ClientInfo = bytes.Clone(s.ClientInfo)
	c.ClientCapabilities = bytes.Clone(s.ClientCapabilities)
	c.Backends, c.Subscriptions, c.Cancelled, c.Pending = nil, nil, nil, nil
	return c
}

func copySnapshot(b *BackendSnapshot) *BackendSnapshot {
	c := *b
	c.Capabilities = bytes.Clone(b.Capabilities)
	c.ServerInfo = bytes.Clone(b.ServerInfo)
	return &c
}
