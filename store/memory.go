package store

import (
	"context"
	"errors"
	"maps"
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
// is deep-copied on the way in and out: callers can never alias it. Its
// methods are in memory_<role>.go, one file per role of Store.
type Memory struct {
	mu       sync.Mutex
	closed   bool
	sessions map[SessionID]*memSession
	keys     map[string]*memKey
	logs     map[SessionID]*memLog   // event logs, by session id
	claims   map[SessionID]*memClaim // GET-stream claims, by session id
	lastID   eventID                 // the last event id issued, by any log
	leases   map[string]time.Time    // call streams' leases, by leaseSlot

	rateMu sync.Mutex         // rates only: counting never waits on sessions
	rates  map[string]memRate // rate counters, by scope and key

	taskMu sync.Mutex                     // tasks only
	tasks  map[string]map[string]*memTask // gateway-run tasks, by owner and id

	userTokens memoryUserTokens // user_oauth tokens, once-ids and refresh locks
	oauth      memoryOAuth      // the authorization server's records

	backendSessions memBackendSessions // per-principal backend sessions, kept-session index; under mu

	instanceID string
	bus        memBus

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-process store and starts its janitor; call
// Close to stop it.
func NewMemory() *Memory {
	m := &Memory{
		sessions: make(map[SessionID]*memSession),
		keys:     make(map[string]*memKey),
		logs:     make(map[SessionID]*memLog),
		claims:   make(map[SessionID]*memClaim),
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
	maps.DeleteFunc(m.sessions, func(_ SessionID, s *memSession) bool { return !now.Before(s.expires) })
	maps.DeleteFunc(m.keys, func(_ string, k *memKey) bool { return !now.Before(k.expires) })
	maps.DeleteFunc(m.logs, func(_ SessionID, l *memLog) bool { return !now.Before(l.expires) })
	maps.DeleteFunc(m.claims, func(_ SessionID, c *memClaim) bool { return !now.Before(c.expires) })
	m.purgeLeases(now)
	m.purgeRates(now)
	m.purgeTasks(now)
	m.purgeOAuth(now)
	m.purgeBackendSessions(now)
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
func (m *Memory) update(id SessionID, ttl time.Duration, fn func(*memSession) error) error {
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
func (m *Memory) liveSession(id SessionID, now time.Time) *memSession {
	return live(m.sessions, id, now, func(ms *memSession) time.Time { return ms.expires })
}

// live returns entries[id] unless it has expired at now, in which case it
// deletes it: every expiring map of the store is read through it.
func live[K comparable, V any](entries map[K]*V, id K, now time.Time, expires func(*V) time.Time) *V {
	v, ok := entries[id]
	if ok && !now.Before(expires(v)) {
		delete(entries, id)
		return nil
	}
	return v
}
