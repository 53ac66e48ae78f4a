package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

// appendEvents appends n events with data e1..en and returns their ids.
func appendEvents(t *testing.T, s store.Store, id string, n, maxLen int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		var err error
		ids[i], err = s.AppendEvent(context.Background(), id, fmt.Appendf(nil, "e%d", i+1), maxLen, time.Minute)
		if err != nil {
			t.Fatalf("AppendEvent %d: %v", i+1, err)
		}
	}
	return ids
}

func eventsAfter(t *testing.T, s store.Store, id, after string, limit int) []store.Event {
	t.Helper()
	evs, err := s.EventsAfter(context.Background(), id, after, limit)
	if err != nil {
		t.Fatalf("EventsAfter(%q, %d): %v", after, limit, err)
	}
	return evs
}

// wantEvents builds the expected events numbered from..to (1-based) out of ids.
func wantEvents(ids []string, from, to int) []store.Event {
	evs := []store.Event{}
	for i := from; i <= to; i++ {
		evs = append(evs, store.Event{ID: ids[i-1], Data: fmt.Appendf(nil, "e%d", i)})
	}
	return evs
}

func TestStore_EventLogAppendAndResume(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		ids := appendEvents(t, s, "s1", 5, 100)
		for i := 1; i < len(ids); i++ {
			if !idLess(t, ids[i-1], ids[i]) {
				t.Errorf("event ids not increasing: %s then %s", ids[i-1], ids[i])
			}
			if !store.EventIDAfter(ids[i], ids[i-1]) || store.EventIDAfter(ids[i-1], ids[i]) {
				t.Errorf("EventIDAfter disagrees with the log's order: %s then %s", ids[i-1], ids[i])
			}
		}
		if got, want := eventsAfter(t, s, "s1", ids[1], 10), wantEvents(ids, 3, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("after 2nd id:\n%q\nwant\n%q", got, want)
		}
		if got, want := eventsAfter(t, s, "s1", ids[1], 2), wantEvents(ids, 3, 4); !reflect.DeepEqual(got, want) {
			t.Errorf("after 2nd id, limit 2:\n%q\nwant\n%q", got, want)
		}
		if got, want := eventsAfter(t, s, "s1", "0-0", 0), wantEvents(ids, 1, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("after 0-0, no limit:\n%q\nwant\n%q", got, want)
		}
		if got := eventsAfter(t, s, "s1", ids[4], 10); len(got) != 0 {
			t.Errorf("after the last id: %q, want none", got)
		}
		if got := eventsAfter(t, s, "other", "0-0", 10); len(got) != 0 {
			t.Errorf("log of an unknown session: %q, want none", got)
		}
		// Callers cannot alias the log.
		got := eventsAfter(t, s, "s1", ids[3], 1)
		got[0].Data[0] = 'X'
		if again := eventsAfter(t, s, "s1", ids[3], 1); string(again[0].Data) != "e5" {
			t.Errorf("stored event changed through an alias: %q", again[0].Data)
		}
		if d, ok := pttl(t, s, store.EventsKey(testPrefix, "s1")); ok && (d <= 59*time.Second || d > time.Minute) {
			t.Errorf("events PTTL = %v, want about 1m", d)
		}
	})
}

func TestStore_EventLogIsBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		ids := appendEvents(t, s, "s1", 10, 3)
		// Trimming is exact on both stores: the newest 3, nothing older.
		if got, want := eventsAfter(t, s, "s1", "0-0", 0), wantEvents(ids, 8, 10); !reflect.DeepEqual(got, want) {
			t.Errorf("retained:\n%q\nwant\n%q", got, want)
		}
		// Resuming from a trimmed id returns what is retained.
		if got, want := eventsAfter(t, s, "s1", ids[2], 0), wantEvents(ids, 8, 10); !reflect.DeepEqual(got, want) {
			t.Errorf("after trimmed id:\n%q\nwant\n%q", got, want)
		}
		if _, ok := s.(*store.Redis); ok {
			if n := target.admin.XLen(context.Background(), store.EventsKey(testPrefix, "s1")).Val(); n != 3 {
				t.Errorf("XLEN = %d, want 3", n)
			}
		}
		if _, err := s.AppendEvent(context.Background(), "s1", []byte("x"), 0, time.Minute); err == nil {
			t.Error("AppendEvent with maxLen 0 succeeded")
		}
	})
}

func TestStore_MalformedEventIDRejected(t *testing.T) {
	bad := []string{"", "abc", "1", "1-", "-1", "1-2-3", "+1-2", "1--2", " 1-2", "1-2 ", "1.5-0", "0x1-0",
		"١-٢", "18446744073709551616-0", "0-18446744073709551616", "$", "-", "+", "(1-0"}
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		appendEvents(t, s, "s1", 1, 10)
		_, isRedis := s.(*store.Redis)
		before := 0
		if isRedis {
			before = commandCalls(t)
		}
		for _, id := range bad {
			if evs, err := s.EventsAfter(context.Background(), "s1", id, 10); !errors.Is(err, store.ErrBadEventID) {
				t.Errorf("EventsAfter(%q) = %q, %v; want ErrBadEventID", id, evs, err)
			}
		}
		if isRedis {
			if n := commandCalls(t) - before; n != 0 {
				t.Errorf("malformed ids sent %d commands to Redis, want 0", n)
			}
		}
		if got := eventsAfter(t, s, "s1", "18446744073709551615-18446744073709551615", 10); len(got) != 0 {
			t.Errorf("after the largest id: %q, want none", got)
		}
	})
}

func TestStore_StreamClaimHandover(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		claim := func(owner, wantPrev string) {
			t.Helper()
			if prev, err := s.ClaimStream(ctx, "s1", owner, time.Minute); err != nil || prev != wantPrev {
				t.Fatalf("ClaimStream(%s) = %q, %v; want %q", owner, prev, err, wantPrev)
			}
		}
		refresh := func(owner string, want bool) {
			t.Helper()
			if held, err := s.RefreshStream(ctx, "s1", owner, time.Hour); err != nil || held != want {
				t.Fatalf("RefreshStream(%s) = %v, %v; want %v", owner, held, err, want)
			}
		}
		release := func(owner string) {
			t.Helper()
			if err := s.ReleaseStream(ctx, "s1", owner); err != nil {
				t.Fatalf("ReleaseStream(%s): %v", owner, err)
			}
		}
		claim("A", "")
		claim("B", "A")
		refresh("A", false)
		release("A") // no-op: B holds it
		refresh("B", true)
		if d, ok := pttl(t, s, store.StreamKey(testPrefix, "s1")); ok && d < 59*time.Minute {
			t.Errorf("claim PTTL after refresh = %v, want about 1h", d)
		}
		release("B")
		refresh("B", false)
		release("B") // nothing to release
		claim("A", "")

		if _, err := s.ClaimStream(ctx, "s1", "A", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // no expiry signal to wait on
		refresh("A", false)
		claim("B", "")
	})
}

func TestStore_DeleteRemovesEventsAndClaim(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		appendEvents(t, s, "s1", 3, 10)
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
		if got := eventsAfter(t, s, "s1", "0-0", 0); len(got) != 0 {
			t.Errorf("events after delete: %q", got)
		}
		// A session recreated under the same id starts with neither.
		create(t, s, sampleSession("s1"), time.Minute)
		if got := eventsAfter(t, s, "s1", "0-0", 0); len(got) != 0 {
			t.Errorf("events of the recreated session: %q", got)
		}
		if prev, err := s.ClaimStream(ctx, "s1", "B", time.Minute); err != nil || prev != "" {
			t.Errorf("ClaimStream on the recreated session = %q, %v; want no previous holder", prev, err)
		}
	})
}

// idLess compares two "<ms>-<seq>" event ids numerically.
func idLess(t *testing.T, a, b string) bool {
	t.Helper()
	parse := func(s string) [2]uint64 {
		ms, seq, ok := strings.Cut(s, "-")
		x, err1 := strconv.ParseUint(ms, 10, 64)
		y, err2 := strconv.ParseUint(seq, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("event id %q is not <ms>-<seq>", s)
		}
		return [2]uint64{x, y}
	}
	x, y := parse(a), parse(b)
	return x[0] < y[0] || (x[0] == y[0] && x[1] < y[1])
}

func TestStore_LatestEventIDIsTheResumePoint(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		if id, err := s.LatestEventID(t.Context(), "s1"); err != nil || id != "0-0" {
			t.Fatalf("empty log: %q %v, want 0-0", id, err)
		}
		ids := appendEvents(t, s, "s1", 3, 100)
		id, err := s.LatestEventID(t.Context(), "s1")
		if err != nil || id != ids[2] {
			t.Fatalf("latest = %q %v, want %q", id, err, ids[2])
		}
		more := appendEvents(t, s, "s1", 1, 100)
		if got := eventsAfter(t, s, "s1", id, 10); len(got) != 1 || got[0].ID != more[0] {
			t.Fatalf("resuming from the latest id gives %q, want only %q", got, more[0])
		}
	})
}

func TestStore_EventLogTagsEachStreamsEvents(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		get, err := s.AppendEvent(ctx, "s1", []byte(`g`), 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		post, err := s.AppendStreamEvent(ctx, "s1", "call-1", []byte(`p`), 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Event{{ID: get, Data: []byte(`g`)}, {ID: post, Data: []byte(`p`), Stream: "call-1"}}
		if got := eventsAfter(t, s, "s1", "0-0", 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("events %q, want %q", got, want)
		}
		if _, err := s.AppendStreamEvent(ctx, "gone", "call-1", []byte(`p`), 10, time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("append to a missing session: %v", err)
		}
	})
}

// EventIDAfter orders ids by number, milliseconds first, as the log issues
// them; an id the log could not have issued comes after nothing.
func TestEventLog_EventIDAfter(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"5-1", "5-0", true},
		{"5-0", "5-1", false},
		{"5-1", "5-1", false},
		{"10-0", "9-99", true}, // numbers, not text
		{"9-99", "10-0", false},
		{"1-0", "0-0", true},
		{"18446744073709551615-18446744073709551615", "18446744073709551615-18446744073709551614", true},
		{"x", "0-0", false},
		{"0-0", "x", true},
		{"x", "y", false},
		{"", "", false},
	} {
		if got := store.EventIDAfter(tc.a, tc.b); got != tc.want {
			t.Errorf("EventIDAfter(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
