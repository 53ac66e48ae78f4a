package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

// stallWait bounds the wait for an operation on a paused server. It is a
// failure bound, many times the store timeout under test: an operation
// that ends at all ends well before it.
const stallWait = 10 * time.Second

// Every operation against a Redis that has stopped answering fails once
// the store's timeout has passed (not after go-redis' read timeouts,
// retries and pool waits), and the store works again once Redis does.
func TestRedis_StalledServerFailsEveryOperationThenRecovers(t *testing.T) {
	rs, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	s, err := store.NewRedis(rs.URL(), store.RedisOptions{KeyPrefix: testPrefix, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)

	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = rs.Resume()
		}
	})
	msg := store.BusMessage{Kind: store.BusCancel, Session: "s1", ID: "1"}
	for _, op := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"LoadSession", func(ctx context.Context) error { _, err := s.LoadSession(ctx, "s1", time.Minute); return err }},
		{"CreateSession", func(ctx context.Context) error {
			return s.CreateSession(ctx, storetest.SampleSession("s2"), time.Minute)
		}},
		{"MarkCancelled", func(ctx context.Context) error { return s.MarkCancelled(ctx, "s1", "1", msg, time.Minute, time.Minute) }},
		{"AddSubscription", func(ctx context.Context) error { return s.AddSubscription(ctx, "s1", "u", time.Minute) }},
		{"SetLogLevel", func(ctx context.Context) error { return s.SetLogLevel(ctx, "s1", "debug", time.Minute) }},
		{"AddPending", func(ctx context.Context) error { return s.AddPending(ctx, "s1", "p", "i", time.Minute) }},
		{"TakeAnswer", func(ctx context.Context) error { _, err := s.TakeAnswer(ctx, "s1", "p"); return err }},
		{"AppendEvent", func(ctx context.Context) error {
			_, err := s.AppendEvent(ctx, "s1", []byte(`{}`), 10, time.Minute)
			return err
		}},
		{"EventsAfter", func(ctx context.Context) error { _, err := s.EventsAfter(ctx, "s1", "0-0", 10); return err }},
		{"ClaimStream", func(ctx context.Context) error { _, err := s.ClaimStream(ctx, "s1", "me", time.Minute); return err }},
		{"SigningKey", func(ctx context.Context) error { _, err := s.SigningKey(ctx, "k", nil); return err }},
		{"Publish", func(ctx context.Context) error { return s.Publish(ctx, msg) }},
		{"Ping", func(ctx context.Context) error { return s.Ping(ctx) }},
		{"DeleteSession", func(ctx context.Context) error { return s.DeleteSession(ctx, "s1") }},
	} {
		done := make(chan error, 1)
		go func() { done <- op.run(context.Background()) }() // no deadline of its own
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s succeeded on a paused server", op.name)
			}
		case <-time.After(stallWait):
			t.Fatalf("%s still waiting on a paused server after %v", op.name, stallWait)
		}
	}

	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	var lastErr error
	recovered := testsupport.Eventually(t, stallWait, func() bool {
		_, lastErr = s.LoadSession(context.Background(), "s1", time.Minute)
		return lastErr == nil
	})
	if !recovered {
		t.Fatalf("the store did not recover once Redis answered again: %v", lastErr)
	}
}
