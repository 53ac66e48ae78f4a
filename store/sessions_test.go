package store_test

// The Sessions contract (sessions.go), on every store.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

func TestSessions_LoadRefreshesTheTTL(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), 250*time.Millisecond)
		storetest.Load(t, s, "s1") // ttl: 1h
		if d, ok := pttl(t, s, store.SessionKey(testPrefix, "s1")); ok && d < 59*time.Minute {
			t.Errorf("PTTL after load = %v, want about 1h", d)
		}
		waitTTL(t, s, 250*time.Millisecond) // past the creation TTL
		storetest.Load(t, s, "s1")
	})
}

// sessionWrites are the conditional writes of Sessions: each must refresh
// the TTL of an existing session and report ErrNotFound for an absent one.
var sessionWrites = map[string]func(s store.Store, id store.SessionID) error{
	"PutBackends": func(s store.Store, id store.SessionID) error {
		return s.PutBackends(context.Background(), id, []*store.BackendSnapshot{{Key: "x"}}, time.Hour)
	},
	"SetLogLevel": func(s store.Store, id store.SessionID) error {
		return s.SetLogLevel(context.Background(), id, "debug", time.Hour)
	},
	"AddSubscription": func(s store.Store, id store.SessionID) error {
		return s.AddSubscription(context.Background(), id, "u", time.Hour)
	},
	"RemoveSubscription": func(s store.Store, id store.SessionID) error {
		return s.RemoveSubscription(context.Background(), id, "u", time.Hour)
	},
}

func TestSessions_WritesRefreshTheTTL(t *testing.T) { writesRefreshTTL(t, sessionWrites) }

// writesRefreshTTL checks that each of writes refreshes the TTL of an
// existing session, on every store.
func writesRefreshTTL(t *testing.T, writes map[string]func(s store.Store, id store.SessionID) error) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		for op, write := range writes {
			name := store.SessionID(op)
			storetest.Create(t, s, storetest.SampleSession(name), 250*time.Millisecond)
			if err := write(s, name); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d, ok := pttl(t, s, store.SessionKey(testPrefix, name)); ok && d < 59*time.Minute {
				t.Errorf("PTTL after %s = %v, want about 1h", name, d)
			}
		}
		waitTTL(t, s, 250*time.Millisecond) // past the last creation TTL
		for name := range writes {
			storetest.Load(t, s, store.SessionID(name))
		}
	})
}

func TestSessions_ExpiredSessionIsNotFound(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), 50*time.Millisecond)
		if d, ok := pttl(t, s, store.SessionKey(testPrefix, "s1")); ok && (d <= 0 || d > 50*time.Millisecond) {
			t.Errorf("PTTL = %v, want (0, 50ms]", d)
		}
		waitTTL(t, s, 50*time.Millisecond)
		assertGone(t, s, "s1")
		if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteSession: err = %v, want ErrNotFound", err)
		}
	})
}

func TestSessions_NoWriteResurrectsADeletedSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		if err := s.DeleteSession(context.Background(), "s1"); err != nil {
			t.Fatal(err)
		}
		assertGone(t, s, "s1")
		if _, ok := s.(*store.Redis); ok {
			if keys := sessionKeys(t, "s1"); len(keys) != 0 {
				t.Errorf("keys %q exist again after writes to a deleted session", keys)
			}
		}
	})
}

// assertGone checks that every read and write of id reports ErrNotFound,
// writes first so that a resurrecting write is caught by the final load.
func assertGone(t *testing.T, s store.Store, id store.SessionID) {
	t.Helper()
	for _, writes := range []map[string]func(store.Store, store.SessionID) error{sessionWrites, markWrites} {
		for op, write := range writes {
			if err := write(s, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", op, err)
			}
		}
	}
	for op, write := range childWrites {
		if err := write(s, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", op, err)
		}
	}
	if evs, err := s.EventsAfter(context.Background(), id, "0-0", 0); err != nil || len(evs) != 0 {
		t.Errorf("EventsAfter = %v, %v; want no events", evs, err)
	}
	if _, err := s.LoadSession(context.Background(), id, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadSession: err = %v, want ErrNotFound", err)
	}
}

func TestSessions_DeleteRemovesEveryKey(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		if err := s.SetLogLevel(ctx, "s1", "debug", time.Minute); err != nil {
			t.Fatal(err)
		}
		for op, write := range childWrites {
			if err := write(s, "s1"); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
		}
		_, isRedis := s.(*store.Redis)
		if isRedis && len(sessionKeys(t, "s1")) != 3 {
			t.Fatalf("keys tagged {s1} before delete = %q, want session, events and stream", sessionKeys(t, "s1"))
		}
		if err := s.DeleteSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if isRedis {
			if keys := sessionKeys(t, "s1"); len(keys) != 0 {
				t.Errorf("keys left after delete: %q", keys)
			}
		}
		if _, err := s.LoadSession(ctx, "s1", time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LoadSession after delete: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second DeleteSession: err = %v, want ErrNotFound", err)
		}
	})
}

func TestSessions_DeleteDropsTheEventLogAndClaim(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		storetest.AppendEvents(t, s, "s1", 3, 10)
		if _, err := s.ClaimStream(ctx, "s1", "A", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(*store.Redis); ok {
			if keys := sessionKeys(t, "s1"); len(keys) != 0 {
				t.Errorf("keys left after delete: %q", keys)
			}
		}
		if got := storetest.EventsAfter(t, s, "s1", "0-0", 0); len(got) != 0 {
			t.Errorf("events after delete: %q", got)
		}
		// A session recreated under the same id starts with neither.
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		if got := storetest.EventsAfter(t, s, "s1", "0-0", 0); len(got) != 0 {
			t.Errorf("events of the recreated session: %q", got)
		}
		if prev, err := s.ClaimStream(ctx, "s1", "B", time.Minute); err != nil || prev != "" {
			t.Errorf("ClaimStream on the recreated session = %q, %v; want no previous holder", prev, err)
		}
	})
}
