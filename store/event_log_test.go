package store_test

// The EventLog contract (event_log.go, call_streams.go), on every store.

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
	"github.com/mcpgw/gateway/store/storetest"
)

// wantEvents builds the expected events numbered from..to (1-based) out of ids.
func wantEvents(ids []store.EventID, from, to int) []store.Event {
	evs := []store.Event{}
	for i := from; i <= to; i++ {
		evs = append(evs, store.Event{ID: ids[i-1], Data: fmt.Appendf(nil, "e%d", i)})
	}
	return evs
}

func TestEventLog_AppendThenResume(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		ids := storetest.AppendEvents(t, s, "s1", 5, 100)
		for i := 1; i < len(ids); i++ {
			if !idLess(t, ids[i-1], ids[i]) {
				t.Errorf("event ids not increasing: %s then %s", ids[i-1], ids[i])
			}
			if !store.EventIDAfter(ids[i], ids[i-1]) || store.EventIDAfter(ids[i-1], ids[i]) {
				t.Errorf("EventIDAfter disagrees with the log's order: %s then %s", ids[i-1], ids[i])
			}
		}
		if got, want := storetest.EventsAfter(t, s, "s1", ids[1], 10), wantEvents(ids, 3, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("after 2nd id:\n%q\nwant\n%q", got, want)
		}
		if got, want := storetest.EventsAfter(t, s, "s1", ids[1], 2), wantEvents(ids, 3, 4); !reflect.DeepEqual(got, want) {
			t.Errorf("after 2nd id, limit 2:\n%q\nwant\n%q", got, want)
		}
		if got, want := storetest.EventsAfter(t, s, "s1", "0-0", 0), wantEvents(ids, 1, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("after 0-0, no limit:\n%q\nwant\n%q", got, want)
		}
		if got := storetest.EventsAfter(t, s, "s1", ids[4], 10); len(got) != 0 {
			t.Errorf("after the last id: %q, want none", got)
		}
		if got := storetest.EventsAfter(t, s, "other", "0-0", 10); len(got) != 0 {
			t.Errorf("log of an unknown session: %q, want none", got)
		}
		// Callers cannot alias the log.
		got := storetest.EventsAfter(t, s, "s1", ids[3], 1)
		got[0].Data[0] = 'X'
		if again := storetest.EventsAfter(t, s, "s1", ids[3], 1); string(again[0].Data) != "e5" {
			t.Errorf("stored event changed through an alias: %q", again[0].Data)
		}
		if d, ok := pttl(t, s, store.EventsKey(testPrefix, "s1")); ok && (d <= 59*time.Second || d > time.Minute) {
			t.Errorf("events PTTL = %v, want about 1m", d)
		}
	})
}

// idLess compares two "<ms>-<seq>" event ids numerically.
func idLess(t *testing.T, a, b store.EventID) bool {
	t.Helper()
	parse := func(s store.EventID) [2]uint64 {
		ms, seq, ok := strings.Cut(string(s), "-")
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

func TestEventLog_IsBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		ids := storetest.AppendEvents(t, s, "s1", 10, 3)
		// Trimming is exact on both stores: the newest 3, nothing older.
		if got, want := storetest.EventsAfter(t, s, "s1", "0-0", 0), wantEvents(ids, 8, 10); !reflect.DeepEqual(got, want) {
			t.Errorf("retained:\n%q\nwant\n%q", got, want)
		}
		// Resuming from a trimmed id returns what is retained.
		if got, want := storetest.EventsAfter(t, s, "s1", ids[2], 0), wantEvents(ids, 8, 10); !reflect.DeepEqual(got, want) {
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

func TestEventLog_MalformedEventIDRejected(t *testing.T) {
	bad := []store.EventID{"", "abc", "1", "1-", "-1", "1-2-3", "+1-2", "1--2", " 1-2", "1-2 ", "1.5-0", "0x1-0",
		"١-٢", "18446744073709551616-0", "0-18446744073709551616", "$", "-", "+", "(1-0"}
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		storetest.AppendEvents(t, s, "s1", 1, 10)
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
		if got := storetest.EventsAfter(t, s, "s1", "18446744073709551615-18446744073709551615", 10); len(got) != 0 {
			t.Errorf("after the largest id: %q, want none", got)
		}
	})
}

// EventIDAfter orders ids by number, milliseconds first, as the log issues
// them; an id the log could not have issued comes after nothing.
func TestEventLog_EventIDAfter(t *testing.T) {
	for _, tc := range []struct {
		a, b store.EventID
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

// A call stream's record lives in the log: the first event names the
// request, the answer marks it done, and only its own events come back.
func TestEventLog_CallStreamLifecycle(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		prime, err := s.StartCallStream(ctx, "s1", "c1", []byte(`"req-7"`), nil, 100, time.Minute, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendEvent(ctx, "s1", []byte(`get`), 100, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartCallStream(ctx, "s1", "c2", []byte(`8`), nil, 100, time.Minute, time.Minute); err != nil {
			t.Fatal(err)
		}
		progress, err := s.AppendStreamEvent(ctx, "s1", "c1", []byte(`progress`), 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}

		cs, evs := storetest.CallEvents(t, s, "c1", "0-0")
		if string(cs.RequestID) != `"req-7"` || !cs.Leased || cs.Done || cs.Lost() {
			t.Fatalf("running stream = %+v", cs)
		}
		want := []store.Event{{ID: prime, Data: []byte{}, Stream: "c1"}, {ID: progress, Data: []byte(`progress`), Stream: "c1"}}
		if len(evs) == 2 && len(evs[0].Data) == 0 {
			evs[0].Data = []byte{} // nil or empty: both mean a priming event
		}
		if !reflect.DeepEqual(evs, want) {
			t.Fatalf("events of c1 = %q, want %q", evs, want)
		}
		if _, evs := storetest.CallEvents(t, s, "c1", prime); len(evs) != 1 || evs[0].ID != progress {
			t.Fatalf("events of c1 after its priming event = %q", evs)
		}

		if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || !ok {
			t.Fatalf("RenewCallLease on a running stream = %v, %v", ok, err)
		}
		answer, err := s.EndCallStream(ctx, "s1", "c1", []byte(`answer`), 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cs, evs = storetest.CallEvents(t, s, "c1", progress)
		if !cs.Done || cs.Leased || cs.Lost() || len(evs) != 1 || evs[0].ID != answer || string(evs[0].Data) != "answer" {
			t.Fatalf("ended stream = %+v, %q", cs, evs)
		}
		// Resuming from the answer itself: nothing more, and still done.
		if cs, evs := storetest.CallEvents(t, s, "c1", answer); !cs.Done || len(evs) != 0 {
			t.Fatalf("after the answer = %+v, %q", cs, evs)
		}
		if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || ok {
			t.Fatalf("RenewCallLease after the end = %v, %v; want false", ok, err)
		}
		if cs, _ := storetest.CallEvents(t, s, "c2", "0-0"); string(cs.RequestID) != `8` || !cs.Leased {
			t.Fatalf("the other stream = %+v", cs)
		}
		if _, err := s.StartCallStream(ctx, "gone", "c3", []byte(`1`), nil, 100, time.Minute, time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("StartCallStream on a missing session: %v", err)
		}
		if d, ok := pttl(t, s, store.CallLeaseKey(testPrefix, "s1", "c2")); ok && (d <= 0 || d > time.Minute) {
			t.Fatalf("lease PTTL = %v, want at most a minute", d)
		}
	})
}

func formatID(ms, seq uint64) store.EventID {
	return store.EventID(strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10))
}

func TestEventLog_CheckResumeID(t *testing.T) {
	future := formatID(uint64(time.Now().Add(time.Hour).UnixMilli()), 0)
	past := formatID(uint64(time.Now().Add(-time.Hour).UnixMilli()), 0)
	for _, tc := range []struct {
		id, newest store.EventID
		bad        bool
	}{
		{"5-1", "5-1", false},
		{"5-0", "5-1", false},
		{"5-2", "5-1", true},
		{"99999999999999-0", "5-1", true},
		{past, "0-0", false},  // an expired log: the id may be real
		{future, "0-0", true}, // stamped an hour ahead: never issued
		{"0-0", "0-0", false}, // the priming id of an empty log
		{"x", "5-1", true},    // malformed
		{"1-0", "x-1", false}, // a newest id that does not parse checks nothing
	} {
		if err := store.CheckResumeID(tc.id, tc.newest); (err != nil) != tc.bad {
			t.Errorf("CheckResumeID(%s, %s) = %v, want bad=%v", tc.id, tc.newest, err, tc.bad)
		}
	}
}
