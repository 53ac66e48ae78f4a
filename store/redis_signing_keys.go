package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

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
