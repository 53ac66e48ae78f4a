package storetest

// The contract of the store's event log, as every backend must keep it.

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func eventLogLatestEventIDIsTheResumePoint(t *testing.T, s store.Store) {
	Create(t, s, SampleSession("s1"), time.Minute)
	if id, err := s.LatestEventID(t.Context(), "s1"); err != nil || id != "0-0" {
		t.Fatalf("empty log: %q %v, want 0-0", id, err)
	}
	ids := AppendEvents(t, s, "s1", 3, 100)
	id, err := s.LatestEventID(t.Context(), "s1")
	if err != nil || id != ids[2] {
		t.Fatalf("latest = %q %v, want %q", id, err, ids[2])
	}
	more := AppendEvents(t, s, "s1", 1, 100)
	if got := EventsAfter(t, s, "s1", id, 10); len(got) != 1 || got[0].ID != more[0] {
		t.Fatalf("resuming from the latest id gives %q, want only %q", got, more[0])
	}
}

func eventLogTagsEachStreamsEvents(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	get, err := s.AppendEvent(ctx, "s1", []byte(`g`), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	post, err := s.AppendStreamEvent(ctx, "s1", "call-1", []byte(`p`), 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{{ID: get, Data: []byte(`g`)}, {ID: post, Data: []byte(`p`), Stream: "call-1"}}
	if got := EventsAfter(t, s, "s1", "0-0", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if _, err := s.AppendStreamEvent(ctx, "gone", "call-1", []byte(`p`), 10, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to a missing session: %v", err)
	}
}

// Ids a client may send back that the log never issued are told apart
// from ids that are merely old.
func eventLogCallStreamRefusesWhatWasNeverIssued(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	prime, err := s.StartCallStream(ctx, "s1", "c1", []byte(`1`), nil, 100, time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		stream store.CallStreamID
		after  store.EventID
		want   error
	}{
		"unknown stream":    {"nosuchstream", prime, store.ErrNotFound},
		"far-future id":     {"c1", "99999999999999-0", store.ErrBadEventID},
		"largest id":        {"c1", "18446744073709551615-18446744073709551615", store.ErrBadEventID},
		"malformed id":      {"c1", "1-x", store.ErrBadEventID},
		"over-long stream":  {store.CallStreamID(make([]byte, 200)), prime, store.ErrNotFound},
		"just after newest": {"c1", bump(t, prime), store.ErrBadEventID},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := s.CallStreamEventsAfter(ctx, "s1", tc.stream, tc.after, 0); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// An id older than anything retained is fine.
	if _, evs := CallEvents(t, s, "c1", "1-0"); len(evs) != 1 {
		t.Fatalf("events after 1-0 = %q, want the priming event", evs)
	}
}
