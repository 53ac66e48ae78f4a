package store

import (
	"context"
	"slices"
	"sync"
	"time"
)

// memoryUserTokens is the Memory store's UserTokens state, by owner and
// name, with its once-ids and locks; entries lapse when read after
// their expiry (or at the next write of their group).
type memoryUserTokens struct {
	mu     sync.Mutex
	tokens map[string]map[string]expiring[[]byte]
	once   map[string]time.Time
	locks  map[string]expiring[string]
}

type expiring[T any] struct {
	v   T
	exp time.Time
}

func (u *memoryUserTokens) init() {
	if u.tokens == nil {
		u.tokens = map[string]map[string]expiring[[]byte]{}
		u.once = map[string]time.Time{}
		u.locks = map[string]expiring[string]{}
	}
}

// PutUserToken implements UserTokens.
func (m *Memory) PutUserToken(_ context.Context, owner, name string, blob []byte, ttl time.Duration) error {
	if err := checkUserTokenNames(owner, name); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if len(blob) == 0 || len(blob) > maxUserTokenBlob {
		return errBlobSize
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	u.init()
	g := u.tokens[owner]
	if g == nil {
		g = map[string]expiring[[]byte]{}
		u.tokens[owner] = g
	}
	g[name] = expiring[[]byte]{v: slices.Clone(blob), exp: time.Now().Add(ttl)}
	return nil
}

// UserToken implements UserTokens.
func (m *Memory) UserToken(_ context.Context, owner, name string) ([]byte, bool, error) {
	if err := checkUserTokenNames(owner, name); err != nil {
		return nil, false, err
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.tokens[owner][name]
	if !ok || !e.exp.After(time.Now()) {
		return nil, false, nil
	}
	return slices.Clone(e.v), true, nil
}

// UserTokenNames implements UserTokens.
func (m *Memory) UserTokenNames(_ context.Context, owner string) ([]string, error) {
	if err := checkUserTokenNames(owner); err != nil {
		return nil, err
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	var names []string
	for n, e := range u.tokens[owner] {
		if e.exp.After(now) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// DeleteUserToken implements UserTokens.
func (m *Memory) DeleteUserToken(_ context.Context, owner, name string) error {
	if err := checkUserTokenNames(owner, name); err != nil {
		return err
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.tokens[owner], name)
	if len(u.tokens[owner]) == 0 {
		delete(u.tokens, owner)
	}
	return nil
}

// UseOnce implements UserTokens.
func (m *Memory) UseOnce(_ context.Context, id string, ttl time.Duration) (bool, error) {
	if err := checkUserTokenNames(id); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	u.init()
	now := time.Now()
	for k, exp := range u.once { // bounded by the links issued within their short life
		if !exp.After(now) {
			delete(u.once, k)
		}
	}
	if _, used := u.once[id]; used {
		return false, nil
	}
	u.once[id] = now.Add(ttl)
	return true, nil
}

// LockUserToken implements UserTokens.
func (m *Memory) LockUserToken(_ context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := checkUserTokenNames(name, holder); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	u.init()
	now := time.Now()
	if l, held := u.locks[name]; held && l.exp.After(now) && l.v != holder {
		return false, nil
	}
	u.locks[name] = expiring[string]{v: holder, exp: now.Add(ttl)}
	return true, nil
}

// UnlockUserToken implements UserTokens.
func (m *Memory) UnlockUserToken(_ context.Context, name, holder string) error {
	u := &m.userTokens
	u.mu.Lock()
	defer u.mu.Unlock()
	if l, ok := u.locks[name]; ok && l.v == holder {
		delete(u.locks, name)
	}
	return nil
}
