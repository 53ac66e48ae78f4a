package store

import (
	"context"
	"fmt"

	"time"

	"github.com/redis/go-redis/v9"
)

// SlotsKey is the Redis key of a slot set: a sorted set of slot ids scored
// by their expiry (ms, the server's clock), in a Cluster slot of its own.
func SlotsKey(prefix, set string) string {
	return prefix + ":{slots:" + set + "}"
}

// TakeSlot implements Slots in one script on the server's clock.
func (r *Redis) TakeSlot(ctx context.Context, set, id string, limit int, ttl time.Duration) (bool, error) {
	if err := checkSlot(set, id, limit, ttl); err != nil {
		return false, err
	}
	n, err := takeSlot.Run(ctx, r.client, []string{SlotsKey(r.prefix, set)}, id, limit, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("store: take slot: %w", err)
	}
	return n == 1, nil
}

// GiveSlot implements Slots.
func (r *Redis) GiveSlot(ctx context.Context, set, id string) error {
	if err := r.client.ZRem(ctx, SlotsKey(r.prefix, set), id).Err(); err != nil {
		return fmt.Errorf("store: give slot: %w", err)
	}
	return nil
}

// KEYS[1]: the set; ARGV: the slot id, the limit, the TTL (ms). Expired
// slots are dropped first; the key lives as long as its latest slot.
var takeSlot = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - now))
return 1`)
