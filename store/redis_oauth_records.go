package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// OAuthRecordKey is the Redis key of one OAuth record, in a Cluster slot
// of its own.
func OAuthRecordKey(prefix, kind, id string) string {
	return prefix + ":{oauth:" + kind + ":" + id + "}"
}

// PutOAuthRecord implements OAuthRecords with SET PX.
func (r *Redis) PutOAuthRecord(ctx context.Context, kind, id string, blob []byte, ttl time.Duration) error {
	if err := checkOAuthRecord(kind, id, blob, true); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if err := r.client.Set(ctx, OAuthRecordKey(r.prefix, kind, id), blob, ttl).Err(); err != nil {
		return fmt.Errorf("store: put oauth record: %w", err)
	}
	return nil
}

// OAuthRecord implements OAuthRecords.
func (r *Redis) OAuthRecord(ctx context.Context, kind, id string) ([]byte, bool, error) {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return nil, false, err
	}
	b, err := r.client.Get(ctx, OAuthRecordKey(r.prefix, kind, id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: get oauth record: %w", err)
	}
	return b, true, nil
}

// TakeOAuthRecord implements OAuthRecords with GETDEL.
func (r *Redis) TakeOAuthRecord(ctx context.Context, kind, id string) ([]byte, bool, error) {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return nil, false, err
	}
	b, err := r.client.GetDel(ctx, OAuthRecordKey(r.prefix, kind, id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: take oauth record: %w", err)
	}
	return b, true, nil
}

// SwapOAuthRecord implements OAuthRecords: a compare-and-set script.
func (r *Redis) SwapOAuthRecord(ctx context.Context, kind, id string, old, blob []byte, ttl time.Duration) (bool, error) {
	if err := checkOAuthRecord(kind, id, blob, true); err != nil {
		return false, err
	}
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	mode := "match"
	if old == nil {
		mode, old = "absent", []byte{}
	}
	n, err := swapOAuthRecord.Run(ctx, r.client, []string{OAuthRecordKey(r.prefix, kind, id)}, mode, old, blob, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("store: swap oauth record: %w", err)
	}
	return n == 1, nil
}

// DeleteOAuthRecord implements OAuthRecords.
func (r *Redis) DeleteOAuthRecord(ctx context.Context, kind, id string) error {
	if err := checkOAuthRecord(kind, id, nil, false); err != nil {
		return err
	}
	if err := r.client.Del(ctx, OAuthRecordKey(r.prefix, kind, id)).Err(); err != nil {
		return fmt.Errorf("store: delete oauth record: %w", err)
	}
	return nil
}

// KEYS[1]: the record; ARGV: mode (match | absent), old, new, ttl (ms).
var swapOAuthRecord = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == 'absent' then
  if cur then return 0 end
elseif cur ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return 1`)
