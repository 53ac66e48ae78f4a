package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClaimStream runs SET key owner PX ttl GET in a script that first checks
// the session exists, so a claim is never created for a deleted session
// (ErrNotFound).
func (r *Redis) ClaimStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (string, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	keys := []string{SessionKey(r.prefix, id), StreamKey(r.prefix, id)}
	prev, err := claimStream.Run(ctx, r.client, keys, owner, ttl.Milliseconds()).Text()
	if errors.Is(err, redis.Nil) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("store: claim stream: %w", err)
	}
	return prev, nil
}

// KEYS: session hash, claim; ARGV: owner, ttl ms. Returns the previous
// owner ("" if none), or nil when the session is absent.
var claimStream = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local prev = redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'GET')
if prev then return prev end
return ''`)

// RefreshStream extends the claim's TTL if owner still holds it.
func (r *Redis) RefreshStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := refreshStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: refresh stream: %w", err)
	}
	return n == 1, nil
}

// KEYS: claim; ARGV: owner, ttl ms.
var refreshStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// ReleaseStream deletes the claim if owner still holds it; otherwise (taken
// over, expired, never claimed) it does nothing.
func (r *Redis) ReleaseStream(ctx context.Context, id SessionID, owner string) error {
	if err := releaseStream.Run(ctx, r.client, []string{StreamKey(r.prefix, id)}, owner).Err(); err != nil {
		return fmt.Errorf("store: release stream: %w", err)
	}
	return nil
}

// KEYS: claim; ARGV: owner.
var releaseStream = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`)

// RenewCallLease is PEXPIRE on the lease: it never revives a lapsed one.
func (r *Redis) RenewCallLease(ctx context.Context, id SessionID, stream CallStreamID, leaseTTL time.Duration) (bool, error) {
	if err := checkTTL(leaseTTL); err != nil {
		return false, err
	}
	ok, err := r.client.PExpire(ctx, CallLeaseKey(r.prefix, id, stream), leaseTTL).Result()
	if err != nil {
		return false, fmt.Errorf("store: renew call lease: %w", err)
	}
	return ok, nil
}
