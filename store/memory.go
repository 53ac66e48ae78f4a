package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// memoryJanitorInterval is how often expired entries are purged. Expired
// entries are already invisible to readers; the janitor only frees memory.
const memoryJanitorInterval = time.Minute

// errClosed is returned by every Memory method after Close.
var errClosed = errors.New("store: closed")

// Memory is the in-process Store used by a single gateway instance. It
// follows the same contract as Redis (sliding expiry, no resurrection,
// ErrNotFound) so the gateway behaves identically on either. Stored data
// is deep-copied on the way in and out: callers can never alias it.
type Memory struct {
	mu       sync.Mutex
	closed   bool
	sessions map[string]*memSession
	keys     map[string]*memKey
	logs     map[string]*memLog   // event logs, by session id
	claims   map[string]*memClaim // GET-stream claims, by session id
	lastID   eventID              // the last event id issued, by any log
	leases   map[string]time.Time // call streams' leases, by leaseSlot

	instanceID string
	bus        memBus

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// memSession is a stored session; the record's own Backends,
// Subscriptions, Cancelled and Pending are nil, they live in the maps
// beside it.
type memSession struct {
	record    Session
	backends  map[string]*BackendSnapshot
	subs      map[string]struct{}
	cancelled map[string]time.Time // request id -> when its mark expires
	pending   map[string]string
	answers   map[string][]byte
	expires   time.Time
}

type memKey struct {
	key     []byte
	expires time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-process store and starts its janitor; call
// Close to stop it.
func NewMemory() *Memory {
	m := &Memory{
		sessions: make(map[string]*memSession),
		keys:     make(map[string]*memKey),
		logs:     make(map[string]*memLog),
		claims:   make(map[string]*memClaim),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),

		instanceID: newInstanceID(),
		bus:        memBus{queue: make(chan BusMessage, memBusQueueSize)},
	}
	go m.janitor(memoryJanitorInterval)
	return m
}

func (m *Memory) janitor(every time.Duration) {
	defer close(m.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			m.purge(now)
		}
	}
}

// purge drops every entry that expired before now.
func (m *Memory) purge(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.sessions, func(_ string, s *memSession) bool { return !now.Before(s.expires) })
	maps.DeleteFunc(m.keys, func(_ string, k *memKey) bool { return !now.Before(k.expires) })
	maps.DeleteFunc(m.logs, func(_ string, l *memLog) bool { return !now.Before(l.expires) })
	maps.DeleteFunc(m.claims, func(_ string, c *memClaim) bool { return !now.Before(c.expires) })
	m.purgeLeases(now)
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
		ms.pending = make(map[string]string)
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
func (m *Memory) LoadSession(_ context.Context, id string, ttl time.Duration) (*Session, error) {
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
func (m *Memory) PutBackends(_ context.Context, id string, snaps []*BackendSnapshot, ttl time.Duration) error {
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
func (m *Memory) SetLogLevel(_ context.Context, id, level string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		ms.record.LogLevel = level
		return nil
	})
}

// AddSubscription records a subscription; adding it twice is a no-op.
func (m *Memory) AddSubscription(_ context.Context, id, uri string, ttl time.Duration) error {
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
func (m *Memory) RemoveSubscription(_ context.Context, id, uri string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		delete(ms.subs, uri)
		return nil
	})
}

// DeleteSession removes the session, its event log and its stream claim.
func (m *Memory) DeleteSession(_ context.Context, id string) error {
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

// SigningKey returns the named key, storing candidate (or a random key)
// when there is none; each call keeps it alive for another 30 days.
func (m *Memory) SigningKey(_ context.Context, name string, candidate []byte) ([]byte, error) {
	if candidate != nil && len(candidate) != signingKeySize {
		return nil, fmt.Errorf("store: signing key %q: candidate has %d bytes, want %d", name, len(candidate), signingKeySize)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	now := time.Now()
	k, ok := m.keys[name]
	if !ok || !now.Before(k.expires) {
		key, err := keyCandidate(candidate)
		if err != nil {
			return nil, fmt.Errorf("store: signing key %q: %w", name, err)
		}
		k = &memKey{key: key}
		m.keys[name] = k
	}
	k.expires = now.Add(signingKeyTTL)
	return bytes.Clone(k.key), nil
}

// Ping reports whether the store is still open.
func (m *Memory) Ping(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	return nil
}

// Close stops the janitor and the bus dispatcher and waits for both to
// exit, so no goroutine outlives the store; queued bus messages are
// dropped. It is safe to call more than once, but not from a bus callback.
func (m *Memory) Close() error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		dispatcher := m.bus.done
		m.mu.Unlock()
		close(m.stop)
		<-m.done
		if dispatcher != nil {
			<-dispatcher
		}
	})
	return nil
}

// update runs fn on a live session under the lock, then refreshes its
// expiry. An expired session is dropped and reported as ErrNotFound, so a
// write never revives it.
func (m *Memory) update(id string, ttl time.Duration, fn func(*memSession) error) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	now := time.Now()
	ms := m.liveSession(id, now)
	if ms == nil {
		return ErrNotFound
	}
	if err := fn(ms); err != nil {
		return err
	}
	ms.expires = now.Add(ttl)
	return nil
}

// liveSession returns session id if it has not expired at now, dropping it
// if it has. Called with m.mu held.
func (m *Memory) liveSession(id string, now time.Time) *memSession {
	return live(m.sessions, id, now, func(ms *memSession) time.Time { return ms.expires })
}

// live returns entries[id] unless it has expired at now, in which case it
// deletes it: every expiring map of the store is read through it.
func live[V any](entries map[string]*V, id string, now time.Time, expires func(*V) time.Time) *V {
	v, ok := entries[id]
	if ok && !now.Before(expires(v)) {
		delete(entries, id)
		return nil
	}
	return v
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
