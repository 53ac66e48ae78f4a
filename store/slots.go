package store

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/redis/go-redis/v9"
)

// Slots bound what one principal holds at once across every instance: a
// named set of slots (the caller names it, e.g. by a digest of the
// principal), at most a limit of them live. Calls parked for a client's
// input take one each (handler/session/parked_calls.go): a parked call
// costs goroutines, descriptors and keys on whichever instance holds it,
// and its owner cannot be held to a count kept in one process.
//
// Each slot has its own expiry, so a holder that vanishes without giving
// its slot back (its instance died) loses it when the slot expires; a live
// holder renews its slot well within the TTL. The clock is the store's.
type Slots interface {
	// TakeSlot takes slot id of set for ttl when the set has fewer than
	// limit live slots, or renews id's slot, even at the limit, when id
	// holds one already. ok is false when the set is full: nothing is
	// written. set and id are opaque, each at most 200 bytes.
	TakeSlot(ctx context.Context, set, id string, limit int, ttl time.Duration) (ok bool, err error)
	// GiveSlot gives slot id of set back; one not held (expired, never
	// taken) is no error.
	GiveSlot(ctx context.Context, set, id string) error
}

// maxSlotName bounds set and id, so a caller cannot grow Redis keys.
const maxSlotName = 200

func checkSlot(set, id string, limit int, ttl time.Duration) error {
	switch {
	case set == "" || len(set) > maxSlotName || id == "" || len(id) > maxSlotName:
		return fmt.Errorf("store: slot names must be 1 to %d bytes", maxSlotName)
	case limit < 1:
		return fmt.Errorf("store: slot limit %d must be at least 1", limit)
	}
	return checkTTL(ttl)
}

// TakeSlot implements Slots with the process clock: the memory store
// serves one instance.
func (m *Memory) TakeSlot(_ context.Context, set, id string, limit int, ttl time.Duration) (bool, error) {
	if err := checkSlot(set, id, limit, ttl); err != nil {
		return false, err
	}
	now := time.Now()
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	held := m.slots[set]
	maps.DeleteFunc(held, func(_ string, exp time.Time) bool { return !exp.After(now) })
	if _, renew := held[id]; !renew && len(held) >= limit {
		return false, nil
	}
	if held == nil {
		if m.slots == nil {
			m.slots = map[string]map[string]time.Time{}
		}
		held = map[string]time.Time{}
		m.slots[set] = held
	}
	held[id] = now.Add(ttl)
	return true, nil
}

// GiveSlot implements Slots.
func (m *Memory) GiveSlot(_ context.Context, set, id string) error {
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	delete(m.slots[set], id)
	if len(m.slots[set]) == 0 {
		delete(m.slots, set)
	}
	return nil
}

// purgeSlots drops the slots that have expired by now.
func (m *Memory) purgeSlots(now time.Time) {
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	for set, held := range m.slots {
		maps.DeleteFunc(held, func(_ string, exp time.Time) bool { return !exp.After(now) })
		if len(held) == 0 {
			delete(m.slots, set)
		}
	}
}

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
