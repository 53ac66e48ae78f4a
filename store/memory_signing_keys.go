package store

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// memKey is a stored signing key and when it expires unless used again.
type memKey struct {
	key     []byte
	expires time.Time
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
