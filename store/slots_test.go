package store_test

// The Slots contract (slots.go), on every store.

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestSlots_AtMostLimitLiveAndRenewalAtTheLimit(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		set := "alice-" + t.Name()
		for _, id := range []string{"a", "b"} {
			if ok, err := s.TakeSlot(ctx, set, id, 2, time.Minute); err != nil || !ok {
				t.Fatalf("take %s: %v, %v; want taken", id, ok, err)
			}
		}
		if ok, err := s.TakeSlot(ctx, set, "c", 2, time.Minute); err != nil || ok {
			t.Fatalf("third slot over a limit of 2: %v, %v; want refused", ok, err)
		}
		if ok, err := s.TakeSlot(ctx, set, "a", 2, time.Minute); err != nil || !ok {
			t.Fatalf("renewing a held slot at the limit: %v, %v; want renewed", ok, err)
		}
		if ok, _ := s.TakeSlot(ctx, "bob-"+t.Name(), "c", 2, time.Minute); !ok {
			t.Fatal("another set is refused by alice's slots")
		}
		if err := s.GiveSlot(ctx, set, "b"); err != nil {
			t.Fatal(err)
		}
		if err := s.GiveSlot(ctx, set, "never-taken"); err != nil {
			t.Fatalf("giving back a slot not held: %v", err)
		}
		if ok, _ := s.TakeSlot(ctx, set, "c", 2, time.Minute); !ok {
			t.Fatal("a slot given back is not free")
		}
	})
}

func TestSlots_AnExpiredSlotIsFree(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		set := "carol-" + t.Name()
		if ok, _ := s.TakeSlot(ctx, set, "lost", 1, 150*time.Millisecond); !ok {
			t.Fatal("first slot refused")
		}
		if ok, _ := s.TakeSlot(ctx, set, "next", 1, time.Minute); ok {
			t.Fatal("a live slot at the limit let another in")
		}
		// Expiry is what is tested: the holder never gives the slot back.
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok, err := s.TakeSlot(ctx, set, "next", 1, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("an expired slot still counts after 5s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, ok := s.(*store.Redis); ok {
			d, ok := pttl(t, s, store.SlotsKey(testPrefix, set))
			if !ok || d <= 50*time.Second || d > time.Minute {
				t.Fatalf("set PTTL = %v (%v), want its latest slot's minute", d, ok)
			}
		}
	})
}

func TestSlots_RefusesBadNames(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		long := string(make([]byte, 201))
		for name, take := range map[string]func() error{
			"empty set": func() error { _, err := s.TakeSlot(ctx, "", "a", 1, time.Minute); return err },
			"long id":   func() error { _, err := s.TakeSlot(ctx, "s", long, 1, time.Minute); return err },
			"limit 0":   func() error { _, err := s.TakeSlot(ctx, "s", "a", 0, time.Minute); return err },
			"zero ttl":  func() error { _, err := s.TakeSlot(ctx, "s", "a", 1, 0); return err },
		} {
			if take() == nil {
				t.Errorf("%s: accepted", name)
			}
		}
	})
}
