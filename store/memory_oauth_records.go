package store

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// memoryOAuth is the Memory store's OAuth records, by kind and id; a
// record lapses when read after its expiry, or at the janitor's purge.
type memoryOAuth struct {
	mu      sync.Mutex
	records map[string]expiring[[]byte]
}

func oauthKey(kind, id string) string { return kind + "\x00" + id }

// live returns the record at k, dropping it when expired. u.mu is held.
func (u *memoryOAuth) live(k string, now time.Time) ([]byte, bool) {
	e, ok := u.records[k]
	if ok && !e.exp.After(now) {
		delete(u.records, k)
		ok = false
	}
	return e.v, ok
}

// PutOAuthRecord implements OAuthRecords.
func (m *Memory) PutOAuthRecord(_ context.Context, kind, id string, blob []byte, ttl time.Duration) error {
	if err := checkOAuthRecord(kind, id, blob, true); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.records == nil {
		u.records = map[string]expiring[[]byte]{}
	}
	u.records[oauthKey(kind, id)] = expiring[[]byte]{v: slices.Clone(blob), exp: time.Now().Add(ttl)}
	return nil
}

// OAuthRecord implements OAuthRecords.
func (m *Memory) OAuthRecord(_ context.Context, kind, id string) ([]byte, bool, error) {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return nil, false, err
	}
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	v, ok := u.live(oauthKey(kind, id), time.Now())
	return slices.Clone(v), ok, nil
}

// TakeOAuthRecord implements OAuthRecords.
func (m *Memory) TakeOAuthRecord(_ context.Context, kind, id string) ([]byte, bool, error) {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return nil, false, err
	}
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	k := oauthKey(kind, id)
	v, ok := u.live(k, time.Now())
	delete(u.records, k)
	return v, ok, nil
}

// SwapOAuthRecord implements OAuthRecords.
func (m *Memory) SwapOAuthRecord(_ context.Context, kind, id string, old, blob []byte, ttl time.Duration) (bool, error) {
	if err := checkOAuthRecord(kind, id, blob, true); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.records == nil {
		u.records = map[string]expiring[[]byte]{}
	}
	k := oauthKey(kind, id)
	cur, ok := u.live(k, time.Now())
	if (old == nil && ok) || (old != nil && (!ok || !bytes.Equal(cur, old))) {
		return false, nil
	}
	u.records[k] = expiring[[]byte]{v: slices.Clone(blob), exp: time.Now().Add(ttl)}
	return true, nil
}

// DeleteOAuthRecord implements OAuthRecords.
func (m *Memory) DeleteOAuthRecord(_ context.Context, kind, id string) error {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return err
	}
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.records, oauthKey(kind, id))
	return nil
}

// purgeOAuth drops expired records.
func (m *Memory) purgeOAuth(now time.Time) {
	u := &m.oauth
	u.mu.Lock()
	defer u.mu.Unlock()
	maps.DeleteFunc(u.records, func(_ string, e expiring[[]byte]) bool { return !e.exp.After(now) })
}
