package store_test

// The Marks contract (marks.go), on every store.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

// markWrites are the writes of Marks that need the session: like
// sessionWrites, each must refresh its TTL and report ErrNotFound for an
// absent one.
var markWrites = map[string]func(s store.Store, id store.SessionID) error{
	"MarkCancelled": func(s store.Store, id store.SessionID) error {
		msg := store.BusMessage{Kind: store.BusCancel, Session: id, ID: "9"}
		return s.MarkCancelled(context.Background(), id, "9", msg, time.Minute, time.Hour)
	},
	"AddPending": func(s store.Store, id store.SessionID) error {
		return s.AddPending(context.Background(), id, "gw-9", s.InstanceID(), time.Hour)
	},
}

func TestMarks_WritesRefreshTheSessionTTL(t *testing.T) { writesRefreshTTL(t, markWrites) }

// cancel marks reqID on session sid with a mark of life markTTL.
func cancel(t *testing.T, s store.Store, sid store.SessionID, reqID string, markTTL time.Duration) {
	t.Helper()
	msg := store.BusMessage{Kind: store.BusCancel, Session: sid, ID: reqID}
	if err := s.MarkCancelled(context.Background(), sid, reqID, msg, markTTL, time.Hour); err != nil {
		t.Fatalf("MarkCancelled(%.20s): %v", reqID, err)
	}
}

// hashFields returns the field names of session sid's hash (Redis), or
// nil for the memory store.
func hashFields(t *testing.T, s store.Store, sid store.SessionID) []string {
	t.Helper()
	if _, ok := s.(*store.Redis); !ok {
		return nil
	}
	keys, err := target.admin.HKeys(context.Background(), store.SessionKey(testPrefix, sid)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func countPrefix(fields []string, prefix string) int {
	n := 0
	for _, f := range fields {
		if strings.HasPrefix(f, prefix) {
			n++
		}
	}
	return n
}

func TestMarks_CancelOnAMissingSessionPublishesNothing(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		got, _ := collect(t, s)
		msg := store.BusMessage{Kind: store.BusCancel, Session: "gone", ID: "1"}
		if err := s.MarkCancelled(ctx, "gone", "1", msg, time.Minute, time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("MarkCancelled: err = %v, want ErrNotFound", err)
		}
		// The bus is ordered: had the cancel been published, it would
		// arrive before this marker.
		marker := store.BusMessage{Kind: store.BusNotify, Session: "other"}
		storetest.Publish(t, s, marker)
		if m := storetest.Recv(t, got); m.Kind != store.BusNotify {
			t.Errorf("first message = %+v, want the marker", m)
		}
		if _, ok := s.(*store.Redis); ok {
			if keys := sessionKeys(t, "gone"); len(keys) != 0 {
				t.Errorf("MarkCancelled created %q", keys)
			}
		}
	})
}

func TestMarks_LongCancelIDIsBroadcastButNotMarked(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := storetest.SampleSession("s1")
		sess.Cancelled = map[string]bool{strings.Repeat("9", store.MaxCancelIDBytes+1): true}
		storetest.Create(t, s, sess, time.Minute)
		got, _ := collect(t, s)
		long := `"` + strings.Repeat("x", 10_000) + `"`
		atLimit := strings.Repeat("7", store.MaxCancelIDBytes)
		for _, id := range []string{long, atLimit} {
			cancel(t, s, "s1", id, time.Minute)
			m := storetest.Recv(t, got)
			for m.ID != id && m.Kind == store.BusCancel && len(m.ID) < 10 {
				m = storetest.Recv(t, got) // an earlier test's cancel, late through the cluster bus
			}
			if m.Kind != store.BusCancel || m.ID != id {
				t.Errorf("broadcast = %.40v, want the cancel of %.20s", m, id)
			}
		}
		if c := storetest.Load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{atLimit: true}) {
			t.Errorf("Cancelled = %.100v, want only the id of %d bytes", c, store.MaxCancelIDBytes)
		}
		if fields := hashFields(t, s, "s1"); fields != nil && countPrefix(fields, "c:") != 1 {
			t.Errorf("hash holds %d cancel mark fields, want 1", countPrefix(fields, "c:"))
		}
	})
}

func TestMarks_CancelMarksExpireAndAreDropped(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := storetest.SampleSession("s1")
		sess.Cancelled = nil
		storetest.Create(t, s, sess, time.Minute)
		cancel(t, s, "s1", "1", 100*time.Millisecond)
		cancel(t, s, "s1", "2", time.Minute)
		if c := storetest.Load(t, s, "s1").Cancelled; !c["1"] || !c["2"] {
			t.Fatalf("Cancelled = %v, want 1 and 2", c)
		}
		waitTTL(t, s, 100*time.Millisecond) // past mark 1's life
		if c := storetest.Load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{"2": true}) {
			t.Errorf("Cancelled after mark 1 expired = %v, want only 2", c)
		}
		cancel(t, s, "s1", "3", time.Minute)
		if fields := hashFields(t, s, "s1"); fields != nil && slices.Contains(fields, "c:1") {
			t.Errorf("expired mark still in the hash after the next mark: %q", fields)
		}
		// A cancel for the same id again gives it a new life.
		cancel(t, s, "s1", "2", time.Minute)
		if c := storetest.Load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{"2": true, "3": true}) {
			t.Errorf("Cancelled = %v, want 2 and 3", c)
		}
	})
}

func TestMarks_CancelMarksBoundedPerSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := storetest.SampleSession("s1")
		sess.Cancelled = nil
		storetest.Create(t, s, sess, time.Minute)
		const n = 1000 // none of them running: each would have been a field for good
		for i := range n {
			cancel(t, s, "s1", fmt.Sprint(i), time.Minute)
		}
		got := storetest.Load(t, s, "s1").Cancelled
		want := map[string]bool{}
		for i := n - store.MaxCancelMarks; i < n; i++ {
			want[fmt.Sprint(i)] = true
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("live marks = %d %v, want the newest %d", len(got), slices.Sorted(maps.Keys(got)), store.MaxCancelMarks)
		}
		if fields := hashFields(t, s, "s1"); fields != nil && countPrefix(fields, "c:") != store.MaxCancelMarks {
			t.Errorf("hash holds %d cancel mark fields (%d fields in all), want %d", countPrefix(fields, "c:"), len(fields), store.MaxCancelMarks)
		}
	})
}
