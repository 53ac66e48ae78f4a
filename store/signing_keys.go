package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SigningKeys are the keys that sign what the gateway hands clients and
// must verify on any instance: pagination cursors, and later other tokens.
// The store is where instances agree on them; how an instance uses and
// caches them is the router's business (its federated cursors'
// router/sealed/key.go is the caller).
type SigningKeys interface {
	// SigningKey returns the 32-byte key called name that every instance
	// shares, in one round trip, and refreshes its TTL. When the store
	// holds none (first use, or the store lost its data), candidate
	// becomes the key, or a random one when candidate is nil, unless
	// another caller's got there first: every caller gets the key that won.
	SigningKey(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

// signingKeySize is the size of every signing key, in bytes.
const signingKeySize = 32

// signingKeyTTL bounds how long an unused signing key survives; every
// SigningKey call pushes it out again, so a key in use never expires.
const signingKeyTTL = 30 * 24 * time.Hour

// keyCandidate is the key a SigningKey call offers to store: the caller's
// candidate (a copy: the store keeps it), or a new random key.
func keyCandidate(candidate []byte) ([]byte, error) {
	if candidate != nil {
		return bytes.Clone(candidate), nil
	}
	k := make([]byte, signingKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	return k, nil
}

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

// SigningKey pipelines SET NX (only the first caller's candidate wins) and
// GETEX (read whichever won, refreshing its TTL), so every instance gets
// the same key in one round trip.
func (r *Redis) SigningKey(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if candidate != nil && len(candidate) != signingKeySize {
		return nil, fmt.Errorf("store: signing key %q: candidate has %d bytes, want %d", name, len(candidate), signingKeySize)
	}
	key := SigningKeyKey(r.prefix, name)
	// Retry covers the key expiring between SET NX and GETEX.
	for range 3 {
		offer, err := keyCandidate(candidate)
		if err != nil {
			return nil, fmt.Errorf("store: signing key %q: %w", name, err)
		}
		var get *redis.StringCmd
		_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.SetNX(ctx, key, offer, signingKeyTTL)
			get = p.GetEx(ctx, key, signingKeyTTL)
			return nil
		})
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: signing key %q: %w", name, err)
		}
		v, _ := get.Bytes()
		if len(v) != signingKeySize {
			return nil, fmt.Errorf("store: signing key %q: stored key has %d bytes, want %d", name, len(v), signingKeySize)
		}
		return v, nil
	}
	return nil, fmt.Errorf("store: signing key %q: key kept vanishing", name)
}
