package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

var errBlobSize = fmt.Errorf("store: a user token blob must be 1 to %d bytes", maxUserTokenBlob)

// UserTokensKey is the Redis key of one owner's tokens: a hash of sealed
// blobs by name, each field an expiry-prefixed value, in a Cluster slot
// of its own. The key lives as long as its longest-lived token.
func UserTokensKey(prefix, owner string) string { return prefix + ":{utok:" + owner + "}" }

// UseOnceKey and UserTokenLockKey are the keys of a once-id and a lock.
func UseOnceKey(prefix, id string) string         { return prefix + ":{once:" + id + "}" }
func UserTokenLockKey(prefix, name string) string { return prefix + ":{utlock:" + name + "}" }

// PutUserToken implements UserTokens: the field holds the expiry (ms, the
// server's clock) and the blob; the key's TTL is raised to cover it.
func (r *Redis) PutUserToken(ctx context.Context, owner, name string, blob []byte, ttl time.Duration) error {
	if err := checkUserTokenNames(owner, name); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if len(blob) == 0 || len(blob) > maxUserTokenBlob {
		return errBlobSize
	}
	if err := putUserToken.Run(ctx, r.client, []string{UserTokensKey(r.prefix, owner)}, name, blob, ttl.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("store: put user token: %w", err)
	}
	return nil
}

// UserToken implements UserTokens.
func (r *Redis) UserToken(ctx context.Context, owner, name string) ([]byte, bool, error) {
	if err := checkUserTokenNames(owner, name); err != nil {
		return nil, false, err
	}
	v, err := getUserToken.Run(ctx, r.client, []string{UserTokensKey(r.prefix, owner)}, name).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: get user token: %w", err)
	}
	return []byte(v), true, nil
}

// UserTokenNames implements UserTokens.
func (r *Redis) UserTokenNames(ctx context.Context, owner string) ([]string, error) {
	if err := checkUserTokenNames(owner); err != nil {
		return nil, err
	}
	names, err := userTokenNames.Run(ctx, r.client, []string{UserTokensKey(r.prefix, owner)}).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: list user tokens: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// DeleteUserToken implements UserTokens.
func (r *Redis) DeleteUserToken(ctx context.Context, owner, name string) error {
	if err := checkUserTokenNames(owner, name); err != nil {
		return err
	}
	if err := r.client.HDel(ctx, UserTokensKey(r.prefix, owner), name).Err(); err != nil {
		return fmt.Errorf("store: delete user token: %w", err)
	}
	return nil
}

// UseOnce implements UserTokens with SET NX PX.
func (r *Redis) UseOnce(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	if err := checkUserTokenNames(id); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	ok, err := r.client.SetNX(ctx, UseOnceKey(r.prefix, id), 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("store: use once: %w", err)
	}
	return ok, nil
}

// LockUserToken implements UserTokens with SET NX PX (or a renewal by
// the holder).
func (r *Redis) LockUserToken(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := checkUserTokenNames(name, holder); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	n, err := lockUserToken.Run(ctx, r.client, []string{UserTokenLockKey(r.prefix, name)}, holder, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: lock user token: %w", err)
	}
	return n == 1, nil
}

// UnlockUserToken implements UserTokens: deletes the lock only if holder
// still has it.
func (r *Redis) UnlockUserToken(ctx context.Context, name, holder string) error {
	if err := checkUserTokenNames(name, holder); err != nil {
		return err
	}
	if err := unlockUserToken.Run(ctx, r.client, []string{UserTokenLockKey(r.prefix, name)}, holder).Err(); err != nil {
		return fmt.Errorf("store: unlock user token: %w", err)
	}
	return nil
}

// Each field is "<expiry ms>:<blob>". KEYS[1]: the owner's hash; ARGV:
// name, blob, ttl (ms).
var putUserToken = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], exp .. ':' .. ARGV[2])
local pttl = redis.call('PTTL', KEYS[1])
if pttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1`)

var getUserToken = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local i = string.find(v, ':', 1, true)
if tonumber(string.sub(v, 1, i - 1)) <= now then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return false
end
return string.sub(v, i + 1)`)

var userTokenNames = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local names = {}
for i = 1, #all, 2 do
  local v = all[i + 1]
  local j = string.find(v, ':', 1, true)
  if tonumber(string.sub(v, 1, j - 1)) > now then
    names[#names + 1] = all[i]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return names`)

var lockUserToken = redis.NewScript(`
local h = redis.call('GET', KEYS[1])
if h and h ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

var unlockUserToken = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`)
