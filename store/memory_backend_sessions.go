package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The memory store's BackendSessions (backend_sessions.go): principals'
// records and the index, under the store's lock, as Redis keeps them.

// memBackendSessions is the Memory's part for the role.
type memBackendSessions struct {
	principal map[string]memPrincipalSession // by owner
	tracked   map[string]time.Time           // index member -> when it is due
}

type memPrincipalSession struct {
	id      BackendSessionID
	expires time.Time
}

// PrincipalBackendSession returns owner's record and refreshes it.
func (m *Memory) PrincipalBackendSession(_ context.Context, owner string, ttl time.Duration) (BackendSessionID, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errClosed
	}
	now := time.Now()
	rec, ok := m.backendSessions.principal[owner]
	if !ok || !now.Before(rec.expires) {
		return "", nil
	}
	rec.expires = now.Add(ttl)
	m.backendSessions.principal[owner] = rec
	return rec.id, nil
}

// SwapPrincipalBackendSession compares owner's record with old and sets next.
func (m *Memory) SwapPrincipalBackendSession(_ context.Context, owner string, old, next BackendSessionID, ttl time.Duration) (BackendSessionID, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	if len(owner) > MaxBackendSessionOwner {
		return "", fmt.Errorf("store: backend session owner over %d bytes", MaxBackendSessionOwner)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", errClosed
	}
	now := time.Now()
	if m.backendSessions.principal == nil {
		m.backendSessions.principal = map[string]memPrincipalSession{}
	}
	rec, ok := m.backendSessions.principal[owner]
	if !ok || !now.Before(rec.expires) {
		rec = memPrincipalSession{}
	}
	if rec.id != old {
		return rec.id, nil
	}
	if next == "" {
		delete(m.backendSessions.principal, owner)
		return "", nil
	}
	m.backendSessions.principal[owner] = memPrincipalSession{id: next, expires: now.Add(ttl)}
	return next, nil
}

// TrackBackendSessions adds index entries due after checkAfter.
func (m *Memory) TrackBackendSessions(_ context.Context, kept []KeptBackendSession, checkAfter time.Duration) error {
	for _, k := range kept {
		if err := checkKept(k); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	if m.backendSessions.tracked == nil {
		m.backendSessions.tracked = map[string]time.Time{}
	}
	due := time.Now().Add(checkAfter)
	for _, k := range kept {
		m.backendSessions.tracked[k.member()] = due
	}
	return nil
}

// ReleasedBackendSessions checks the entries due, oldest first.
func (m *Memory) ReleasedBackendSessions(_ context.Context, n int, checkAfter time.Duration) ([]KeptBackendSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	now := time.Now()
	due := slices.SortedFunc(maps.Keys(m.backendSessions.tracked), func(a, b string) int {
		return m.backendSessions.tracked[a].Compare(m.backendSessions.tracked[b])
	})
	var released []KeptBackendSession
	for _, member := range due {
		if n == 0 || m.backendSessions.tracked[member].After(now) {
			break
		}
		n--
		k, ok := keptFrom(member)
		if ok && m.stillKept(k, now) {
			m.backendSessions.tracked[member] = now.Add(checkAfter)
			continue
		}
		delete(m.backendSessions.tracked, member)
		if ok {
			released = append(released, k)
		}
	}
	return released, nil
}

// stillKept reports whether k's owner still keeps it; under m.mu.
func (m *Memory) stillKept(k KeptBackendSession, now time.Time) bool {
	if k.Owner != "" {
		rec, ok := m.backendSessions.principal[k.Owner]
		return ok && now.Before(rec.expires) && rec.id == k.ID
	}
	ms := m.liveSession(k.Session, now)
	if ms == nil {
		return false
	}
	snap := ms.backends[k.Backend]
	return snap != nil && snap.SessionID == k.ID
}

// purgeBackendSessions drops expired principal records; under m.mu.
func (m *Memory) purgeBackendSessions(now time.Time) {
	maps.DeleteFunc(m.backendSessions.principal, func(_ string, r memPrincipalSession) bool { return !now.Before(r.expires) })
}
