package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RateKey is the Redis key of a rate counter. The {rl:<scope>} hash tag
// puts every counter of a scope (a virtual host) in one Cluster slot, so
// one script decides all the limits of a request; the price is that one
// vhost's counters live on one shard.
func RateKey(prefix, scope, key string) string {
	return prefix + ":{rl:" + scope + "}:" + key
}

// TakeRate runs GCRA for every check in one script, on the server's clock.
func (r *Redis) TakeRate(ctx context.Context, scope string, checks []RateCheck) (RateVerdict, error) {
	if err := checkRates(scope, checks); err != nil {
		return RateVerdict{}, err
	}
	if len(checks) == 0 {
		return RateVerdict{Allowed: true}, nil
	}
	keys := make([]string, len(checks))
	args := make([]any, 0, 2*len(checks))
	for i, c := range checks {
		keys[i] = RateKey(r.prefix, scope, c.Key)
		args = append(args, strconv.FormatInt(emission(c)*c.count(), 10), strconv.FormatInt(c.Window.Microseconds(), 10))
	}
	res, err := takeRate.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return RateVerdict{}, fmt.Errorf("store: rate limits: %w", err)
	}
	if len(res) != 2 {
		return RateVerdict{}, fmt.Errorf("store: rate limits: unexpected reply %v", res)
	}
	if res[0] == 0 {
		return RateVerdict{Allowed: true}, nil
	}
	return RateVerdict{Denied: int(res[0] - 1), RetryAfter: time.Duration(res[1]) * time.Microsecond}, nil
}

// KEYS: the counters; ARGV: per counter, its emission interval times the
// requests taken, and its window (µs). Returns {0, 0} when every counter took the request, else {i, wait}:
// the 1-based counter that refused and the µs until it would not; nothing
// is written then. Each counter expires when it would be empty again.
var takeRate = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next = {}
for i, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  local tat = now
  if v then tat = math.max(tonumber(v), now) end
  local n = tat + tonumber(ARGV[2*i-1])
  local allowAt = n - tonumber(ARGV[2*i])
  if allowAt > now then return {i, allowAt - now} end
  next[i] = n
end
for i, key in ipairs(KEYS) do
  redis.call('SET', key, string.format('%d', next[i]), 'PX', math.max(1, math.ceil((next[i] - now) / 1000)))
end
return {0, 0}`)
