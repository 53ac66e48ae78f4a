package store

import (
	"bytes"
	"crypto/rand"
	"time"
)

// Signing keys (SigningKey) sign what the gateway hands clients and must
// verify on any instance: pagination cursors, and later other tokens. The
// store is where instances agree on them; how an instance uses and caches
// them is the router's business (router/shared_key.go).

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
