package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"time"
)

// SigningKeys are the keys that sign what the gateway hands clients and
// must verify on any instance: pagination cursors, and later other tokens.
// The store is where instances agree on them; how an instance uses and
// caches them is the router's business (its federated cursors'
// router/shared_key.go is the caller).
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
