package store

import (
	"context"
	"fmt"
	"time"
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
