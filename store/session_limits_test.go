package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

// cancel marks reqID on session sid with a mark of life markTTL.
func cancel(t *testing.T, s store.Store, sid, reqID string, markTTL time.Duration) {
	t.Helper()
	msg := store.BusMessage{Kind: store.BusCancel, Session: sid, ID: reqID}
	if err := s.MarkCancelled(context.Background(), sid, reqID, msg, markTTL, time.Hour); err != nil {
		t.Fatalf("MarkCancelled(%.20s): %v", reqID, err)
	}
}

// hashFields returns the field names of session sid's hash (Redis), or
// nil for the memory store.
func hashFields(t *testing.T, s store.Store, sid string) []string {
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

func TestCancelMarks_BoundedPerSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.Cancelled = nil
		create(t, s, sess, time.Minute)
		const n = 1000 // none of them running: each would have been a field for good
		for i := range n {
			cancel(t, s, "s1", fmt.Sprint(i), time.Minute)
		}
		got := load(t, s, "s1").Cancelled
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

func TestCancelMarks_LongIDIsBroadcastButNotMarked(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.Cancelled = map[string]bool{strings.Repeat("9", store.MaxCancelIDBytes+1): true}
		create(t, s, sess, time.Minute)
		got, _ := collect(t, s)
		long := `"` + strings.Repeat("x", 10_000) + `"`
		atLimit := strings.Repeat("7", store.MaxCancelIDBytes)
		for _, id := range []string{long, atLimit} {
			cancel(t, s, "s1", id, time.Minute)
			m := recv(t, got)
			for m.ID != id && m.Kind == store.BusCancel && len(m.ID) < 10 {
				m = recv(t, got) // an earlier test's cancel, late through the cluster bus
			}
			if m.Kind != store.BusCancel || m.ID != id {
				t.Errorf("broadcast = %.40v, want the cancel of %.20s", m, id)
			}
		}
		if c := load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{atLimit: true}) {
			t.Errorf("Cancelled = %.100v, want only the id of %d bytes", c, store.MaxCancelIDBytes)
		}
		if fields := hashFields(t, s, "s1"); fields != nil && countPrefix(fields, "c:") != 1 {
			t.Errorf("hash holds %d cancel mark fields, want 1", countPrefix(fields, "c:"))
		}
	})
}

func TestCancelMarks_ExpireAndAreDropped(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.Cancelled = nil
		create(t, s, sess, time.Minute)
		cancel(t, s, "s1", "1", 100*time.Millisecond)
		cancel(t, s, "s1", "2", time.Minute)
		if c := load(t, s, "s1").Cancelled; !c["1"] || !c["2"] {
			t.Fatalf("Cancelled = %v, want 1 and 2", c)
		}
		time.Sleep(150 * time.Millisecond) // past mark 1's life: no signal to wait on
		if c := load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{"2": true}) {
			t.Errorf("Cancelled after mark 1 expired = %v, want only 2", c)
		}
		cancel(t, s, "s1", "3", time.Minute)
		if fields := hashFields(t, s, "s1"); fields != nil && slices.Contains(fields, "c:1") {
			t.Errorf("expired mark still in the hash after the next mark: %q", fields)
		}
		// A cancel for the same id again gives it a new life.
		cancel(t, s, "s1", "2", time.Minute)
		if c := load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{"2": true, "3": true}) {
			t.Errorf("Cancelled = %v, want 2 and 3", c)
		}
	})
}

// A session written before marks expired holds c:<id> = "1" fields, as many
// as its client sent: the first new mark clears them out.
func TestCancelMarks_MarksFromBeforeExpiryAreDropped(t *testing.T) {
	ctx := context.Background()
	useTarget(t, singleTarget())
	s := newRedis(t)
	sess := sampleSession("s1")
	sess.Cancelled = nil
	create(t, s, sess, time.Minute)
	key := store.SessionKey(testPrefix, "s1")
	legacy := make([]any, 0, 2*5000)
	for i := range 5000 {
		legacy = append(legacy, fmt.Sprintf("c:%d", i), "1")
	}
	if err := target.admin.HSet(ctx, key, legacy...).Err(); err != nil {
		t.Fatal(err)
	}
	if c := load(t, s, "s1").Cancelled; c != nil {
		t.Errorf("old marks read as live: %d of them", len(c))
	}
	cancel(t, s, "s1", "new", time.Minute)
	if fields := hashFields(t, s, "s1"); countPrefix(fields, "c:") != 1 {
		t.Errorf("hash holds %d cancel mark fields after a new mark, want 1", countPrefix(fields, "c:"))
	}
}

func TestSubscriptions_BoundedPerSession(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.Subscriptions = nil
		create(t, s, sess, time.Minute)
		var want []string
		for i := range store.MaxSubscriptions {
			uri := fmt.Sprintf("file:///%03d", i)
			if err := s.AddSubscription(ctx, "s1", uri, time.Minute); err != nil {
				t.Fatalf("subscription %d: %v", i, err)
			}
			want = append(want, uri)
		}
		for name, uri := range map[string]string{
			"one too many": "file:///new",
			"URI too long": "file:///" + strings.Repeat("x", store.MaxSubscriptionURIBytes),
		} {
			if err := s.AddSubscription(ctx, "s1", uri, time.Minute); !errors.Is(err, store.ErrLimit) {
				t.Errorf("%s: err = %v, want ErrLimit", name, err)
			}
		}
		if err := s.AddSubscription(ctx, "s1", want[0], time.Minute); err != nil {
			t.Errorf("subscribing again at the limit: %v", err)
		}
		if got := load(t, s, "s1").Subscriptions; !reflect.DeepEqual(got, want) {
			t.Errorf("subscriptions changed by refused writes: %d of them", len(got))
		}
		if err := s.RemoveSubscription(ctx, "s1", want[0], time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.AddSubscription(ctx, "s1", "file:///new", time.Minute); err != nil {
			t.Errorf("subscribing after an unsubscribe made room: %v", err)
		}
		if err := s.RemoveSubscription(ctx, "s1", "file:///new", time.Minute); err != nil {
			t.Fatal(err)
		}
		atLimit := "file:///" + strings.Repeat("x", store.MaxSubscriptionURIBytes-len("file:///"))
		if err := s.AddSubscription(ctx, "s1", atLimit, time.Minute); err != nil {
			t.Errorf("a URI of exactly %d bytes: %v", store.MaxSubscriptionURIBytes, err)
		}
	})
}

func TestCreateSession_ClientMetadataBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.ClientCapabilities = json.RawMessage(`{"experimental":{"x":"` + strings.Repeat("a", store.MaxClientMetadataBytes) + `"}}`)
		if err := s.CreateSession(context.Background(), sess, time.Minute); !errors.Is(err, store.ErrLimit) {
			t.Fatalf("CreateSession: err = %v, want ErrLimit", err)
		}
		if _, err := s.LoadSession(context.Background(), "s1", time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LoadSession after a refused create: err = %v, want ErrNotFound", err)
		}
	})
}
