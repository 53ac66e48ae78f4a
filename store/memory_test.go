package store_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestMemory_CloseStopsJanitor(t *testing.T) {
	base := janitors()
	m := store.NewMemory()
	if got := janitors(); got != base+1 {
		t.Fatalf("janitor goroutines after NewMemory = %d, want %d", got, base+1)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	// Close waits for the janitor to return, so no polling is needed.
	if got := janitors(); got != base {
		t.Errorf("janitor goroutines after Close = %d, want %d (leak)", got, base)
	}
	if err := m.Ping(context.Background()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

// janitors counts goroutines started by NewMemory (its janitor is the only
// one). Matching the creator rather than the running function also counts
// a janitor goroutine that has not been scheduled yet.
func janitors() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("created by github.com/mcpgw/gateway/store.NewMemory"))
}

func TestMemory_PublishNeverBlocksAndCountsDrops(t *testing.T) {
	m := store.NewMemory()
	t.Cleanup(func() { m.Close() })
	blocked, release := make(chan struct{}), make(chan struct{})
	delivered := make(chan string, 2048)
	m.Subscribe(func(msg store.BusMessage) {
		if msg.ID == "first" {
			close(blocked)
			<-release // a slow callback holds up the dispatcher
		}
		delivered <- msg.ID
	})
	publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "first"})
	<-blocked
	const queue, extra = 1024, 10
	for range queue + extra { // returns at once although nothing is consumed
		publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "more"})
	}
	if n := m.DroppedMessages(); n != extra {
		t.Errorf("DroppedMessages = %d, want %d", n, extra)
	}
	close(release)
	for range 1 + queue {
		select {
		case <-delivered:
		case <-time.After(busWait):
			t.Fatal("queued messages were not delivered")
		}
	}
}

func TestMemory_PublishBeforeSubscribeIsDiscarded(t *testing.T) {
	m := store.NewMemory()
	t.Cleanup(func() { m.Close() })
	publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "early"})
	got, _ := collect(t, m)
	publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "late"})
	if msg := recv(t, got); msg.ID != "late" {
		t.Errorf("first delivered = %q, want late (nobody was subscribed to early)", msg.ID)
	}
}
