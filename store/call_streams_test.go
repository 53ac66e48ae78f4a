package store_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func callEvents(t *testing.T, s store.Store, stream, after string) (*store.CallStream, []store.Event) {
	t.Helper()
	cs, evs, err := s.CallStreamEventsAfter(context.Background(), "s1", stream, after, 0)
	if err != nil {
		t.Fatalf("CallStreamEventsAfter(%s, %s): %v", stream, after, err)
	}
	return cs, evs
}

// A call stream's record lives in the log: the first event names the
// request, the answer marks it done, and only its own events come back.
func TestStore_CallStreamLifecycle(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
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

		cs, evs := callEvents(t, s, "c1", "0-0")
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
		if _, evs := callEvents(t, s, "c1", prime); len(evs) != 1 || evs[0].ID != progress {
			t.Fatalf("events of c1 after its priming event = %q", evs)
		}

		if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || !ok {
			t.Fatalf("RenewCallLease on a running stream = %v, %v", ok, err)
		}
		answer, err := s.EndCallStream(ctx, "s1", "c1", []byte(`answer`), 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cs, evs = callEvents(t, s, "c1", progress)
		if !cs.Done || cs.Leased || cs.Lost() || len(evs) != 1 || evs[0].ID != answer || string(evs[0].Data) != "answer" {
			t.Fatalf("ended stream = %+v, %q", cs, evs)
		}
		// Resuming from the answer itself: nothing more, and still done.
		if cs, evs := callEvents(t, s, "c1", answer); !cs.Done || len(evs) != 0 {
			t.Fatalf("after the answer = %+v, %q", cs, evs)
		}
		if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || ok {
			t.Fatalf("RenewCallLease after the end = %v, %v; want false", ok, err)
		}
		if cs, _ := callEvents(t, s, "c2", "0-0"); string(cs.RequestID) != `8` || !cs.Leased {
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

// An owner that stops renewing loses the call: the stream is Lost once the
// lease lapses, and a late renewal cannot revive it.
func TestStore_CallStreamLostWhenTheLeaseLapses(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		if _, err := s.StartCallStream(ctx, "s1", "c1", []byte(`1`), nil, 100, 30*time.Millisecond, time.Minute); err != nil {
			t.Fatal(err)
		}
		// Expiry has no signal to wait on: poll the state, bounded.
		eventually(t, "the lease to lapse", func() bool {
			cs, _ := callEvents(t, s, "c1", "0-0")
			return cs.Lost()
		})
		if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || ok {
			t.Fatalf("RenewCallLease after the lease lapsed = %v, %v; want false", ok, err)
		}
	})
}

// Ids a client may send back that the log never issued are told apart
// from ids that are merely old.
func TestStore_CallStreamRefusesWhatWasNeverIssued(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		prime, err := s.StartCallStream(ctx, "s1", "c1", []byte(`1`), nil, 100, time.Minute, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]struct {
			stream, after string
			want          error
		}{
			"unknown stream":    {"nosuchstream", prime, store.ErrNotFound},
			"far-future id":     {"c1", "99999999999999-0", store.ErrBadEventID},
			"largest id":        {"c1", "18446744073709551615-18446744073709551615", store.ErrBadEventID},
			"malformed id":      {"c1", "1-x", store.ErrBadEventID},
			"over-long stream":  {string(make([]byte, 200)), prime, store.ErrNotFound},
			"just after newest": {"c1", bump(t, prime), store.ErrBadEventID},
		} {
			t.Run(name, func(t *testing.T) {
				if _, _, err := s.CallStreamEventsAfter(ctx, "s1", tc.stream, tc.after, 0); !errors.Is(err, tc.want) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
			})
		}
		// An id older than anything retained is fine.
		if _, evs := callEvents(t, s, "c1", "1-0"); len(evs) != 1 {
			t.Fatalf("events after 1-0 = %q, want the priming event", evs)
		}
	})
}

// bump returns the event id right after id.
func bump(t *testing.T, id string) string {
	t.Helper()
	ms, seq, _ := strings.Cut(id, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return ms + "-" + strconv.FormatUint(n+1, 10)
}

func formatID(ms, seq uint64) string {
	return strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10)
}

func TestCheckResumeID(t *testing.T) {
	future := formatID(uint64(time.Now().Add(time.Hour).UnixMilli()), 0)
	past := formatID(uint64(time.Now().Add(-time.Hour).UnixMilli()), 0)
	for _, tc := range []struct {
		id, newest string
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
