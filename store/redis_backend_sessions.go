package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis store's BackendSessions (backend_sessions.go). A principal's
// backend session is one string key with a sliding TTL; the index of kept
// backend sessions is one sorted set scored by when each entry is next
// checked. Checking reads each owner (a session's b:<backend> field, or
// the principal's key) in one pipelined round trip, and ZREM decides which
// of several instances checking at once closes a released session.

// PrincipalBackendSessionKey is the key of a principal's backend session.
func PrincipalBackendSessionKey(prefix, owner string) string {
	return prefix + ":{bsp:" + owner + "}"
}

// KeptBackendSessionsKey is the index of kept backend sessions.
func KeptBackendSessionsKey(prefix string) string {
	return prefix + ":{bsess}:kept"
}

// PrincipalBackendSession reads owner's key and refreshes its TTL (GETEX).
func (r *Redis) PrincipalBackendSession(ctx context.Context, owner string, ttl time.Duration) (BackendSessionID, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	id, err := r.client.GetEx(ctx, PrincipalBackendSessionKey(r.prefix, owner), ttl).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: principal backend session: %w", err)
	}
	return BackendSessionID(id), nil
}

// swapPrincipalSession: KEYS[1] the principal's key; ARGV old, next, ttl
// (ms). Returns the id kept afterwards ("" for none).
var swapPrincipalSession = redis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return cur end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) return '' end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return ARGV[2]`)

// SwapPrincipalBackendSession compares and sets owner's key in one script.
func (r *Redis) SwapPrincipalBackendSession(ctx context.Context, owner string, old, next BackendSessionID, ttl time.Duration) (BackendSessionID, error) {
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	if len(owner) > MaxBackendSessionOwner {
		return "", fmt.Errorf("store: backend session owner over %d bytes", MaxBackendSessionOwner)
	}
	kept, err := swapPrincipalSession.Run(ctx, r.client, []string{PrincipalBackendSessionKey(r.prefix, owner)},
		string(old), string(next), ttl.Milliseconds()).Text()
	if err != nil {
		return "", fmt.Errorf("store: swap principal backend session: %w", err)
	}
	return BackendSessionID(kept), nil
}

// TrackBackendSessions adds the entries to the index (ZADD).
func (r *Redis) TrackBackendSessions(ctx context.Context, kept []KeptBackendSession, checkAfter time.Duration) error {
	if len(kept) == 0 {
		return nil
	}
	due := float64(time.Now().Add(checkAfter).UnixMilli())
	zs := make([]redis.Z, len(kept))
	for i, k := range kept {
		if err := checkKept(k); err != nil {
			return err
		}
		zs[i] = redis.Z{Score: due, Member: k.member()}
	}
	if err := r.client.ZAdd(ctx, KeptBackendSessionsKey(r.prefix), zs...).Err(); err != nil {
		return fmt.Errorf("store: track backend sessions: %w", err)
	}
	return nil
}

// ReleasedBackendSessions reads up to n due entries, checks their owners
// in one pipeline, then reschedules the kept ones and removes the others
// in another; an entry another instance removed first is not returned.
func (r *Redis) ReleasedBackendSessions(ctx context.Context, n int, checkAfter time.Duration) ([]KeptBackendSession, error) {
	index := KeptBackendSessionsKey(r.prefix)
	now := time.Now()
	members, err := r.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: index, Start: "-inf",
		Stop: strconv.FormatInt(now.UnixMilli(), 10), ByScore: true, Count: int64(n)}).Result()
	if err != nil || len(members) == 0 {
		return nil, wrapErr("released backend sessions", err)
	}
	kept := make([]KeptBackendSession, len(members))
	valid := make([]bool, len(members))
	owners := make([]*redis.StringCmd, len(members))
	_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range members {
			if kept[i], valid[i] = keptFrom(m); !valid[i] {
				continue
			}
			if kept[i].Owner != "" {
				owners[i] = p.Get(ctx, PrincipalBackendSessionKey(r.prefix, kept[i].Owner))
			} else {
				owners[i] = p.HGet(ctx, SessionKey(r.prefix, kept[i].Session), prefixBackend+kept[i].Backend)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrapErr("released backend sessions", err)
	}
	removed := make([]*redis.IntCmd, len(members))
	_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range members {
			if valid[i] && ownerKeeps(kept[i], owners[i]) {
				p.ZAddXX(ctx, index, redis.Z{Score: float64(now.Add(checkAfter).UnixMilli()), Member: m})
				continue
			}
			removed[i] = p.ZRem(ctx, index, m)
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr("released backend sessions", err)
	}
	var released []KeptBackendSession
	for i := range members {
		if valid[i] && removed[i] != nil && removed[i].Val() == 1 {
			released = append(released, kept[i])
		}
	}
	return released, nil
}

// ownerKeeps reports whether the owner's value read by cmd still names k.
func ownerKeeps(k KeptBackendSession, cmd *redis.StringCmd) bool {
	val, err := cmd.Result()
	if err != nil {
		return false // redis.Nil: the owner is gone
	}
	if k.Owner != "" {
		return BackendSessionID(val) == k.ID
	}
	var snap struct {
		SessionID BackendSessionID `json:"sessionId"`
	}
	return json.Unmarshal([]byte(val), &snap) == nil && snap.SessionID == k.ID
}

// wrapErr names the operation of a Redis error; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
