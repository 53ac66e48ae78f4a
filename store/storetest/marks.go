package storetest

// The contract of the store's marks, as every backend must keep it.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func marksCancelMarkSeenOnLoadAndBroadcast(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	got, _ := collect(t, s)
	reqID := `"abc"`
	msg := store.BusMessage{Kind: store.BusCancel, Session: "s1", ID: reqID, Data: json.RawMessage(`{"reason":"user"}`)}
	if err := s.MarkCancelled(ctx, "s1", reqID, msg, time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	want := msg
	want.From = s.InstanceID()
	if m := Recv(t, got); !reflect.DeepEqual(m, want) {
		t.Errorf("broadcast = %+v, want %+v", m, want)
	}
	if c := Load(t, s, "s1").Cancelled; !c[reqID] || !c["41"] {
		t.Errorf("Cancelled = %v, want %s marked beside 41", c, reqID)
	}

	if err := s.ClearCancelled(ctx, "s1", reqID); err != nil {
		t.Fatal(err)
	}
	if c := Load(t, s, "s1").Cancelled; !reflect.DeepEqual(c, map[string]bool{"41": true}) {
		t.Errorf("Cancelled after ClearCancelled = %v, want only 41", c)
	}
	if err := s.ClearCancelled(ctx, "s1", "41"); err != nil {
		t.Fatal(err)
	}
	if c := Load(t, s, "s1").Cancelled; c != nil {
		t.Errorf("Cancelled after clearing every mark = %v, want nil", c)
	}
	for _, sid := range []store.SessionID{"s1", "missing"} { // absent mark, absent session
		if err := s.ClearCancelled(ctx, sid, reqID); err != nil {
			t.Errorf("ClearCancelled(%s): %v", sid, err)
		}
	}
}

func marksPendingRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	steps := []error{
		s.AddPending(ctx, "s1", "gw-1", "aaaaaaaaaaaaaaaa", time.Minute),
		s.AddPending(ctx, "s1", "gw-2", "bbbbbbbbbbbbbbbb", time.Minute),
		s.RemovePending(ctx, "s1", "gw-0"),
		s.RemovePending(ctx, "s1", "never-added"),
		s.RemovePending(ctx, "missing", "gw-1"),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := map[store.ServerRequestID]string{"gw-1": "aaaaaaaaaaaaaaaa", "gw-2": "bbbbbbbbbbbbbbbb"}
	if got := Load(t, s, "s1").Pending; !reflect.DeepEqual(got, want) {
		t.Errorf("Pending = %v, want %v", got, want)
	}
	if err := s.AddPending(ctx, "missing", "gw-1", "x", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddPending on a missing session: err = %v, want ErrNotFound", err)
	}
}

func marksAnswerStoredAndBroadcastOnlyWhilePending(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	got, _ := collect(t, s)
	answer := []byte(`{"jsonrpc":"2.0","id":"gw-1","result":{}}`)
	msg := store.BusMessage{Kind: store.BusResponse, Session: "s1", ID: "gw-1", Data: answer}
	if err := s.PostAnswer(ctx, "s1", "gw-1", answer, msg, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PostAnswer with nothing pending: err = %v, want ErrNotFound", err)
	}
	if err := s.AddPending(ctx, "s1", "gw-1", s.InstanceID(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.PostAnswer(ctx, "s1", "gw-1", answer, msg, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The broadcast comes first: nothing was published by the refused post.
	if m := Recv(t, got); m.Kind != store.BusResponse || string(m.Data) != string(answer) {
		t.Errorf("broadcast = %+v", m)
	}
	// The stored copy is there for a waiter whose message was lost, once.
	if a, err := s.TakeAnswer(ctx, "s1", "gw-1"); err != nil || string(a) != string(answer) {
		t.Fatalf("TakeAnswer = %s, %v", a, err)
	}
	if a, err := s.TakeAnswer(ctx, "s1", "gw-1"); err != nil || a != nil {
		t.Fatalf("second TakeAnswer = %s, %v, want nothing", a, err)
	}
	// RemovePending drops an answer nobody took.
	if err := s.PostAnswer(ctx, "s1", "gw-1", answer, msg, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.RemovePending(ctx, "s1", "gw-1"); err != nil {
		t.Fatal(err)
	}
	if a, err := s.TakeAnswer(ctx, "s1", "gw-1"); err != nil || a != nil {
		t.Fatalf("TakeAnswer after RemovePending = %s, %v", a, err)
	}
	if a, err := s.TakeAnswer(ctx, "missing", "gw-1"); err != nil || a != nil {
		t.Fatalf("TakeAnswer on a missing session = %s, %v", a, err)
	}
	if _, still := Load(t, s, "s1").Pending["gw-1"]; still {
		t.Error("gw-1 still pending after RemovePending")
	}
}
