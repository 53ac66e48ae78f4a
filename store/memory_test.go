package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
	"go.uber.org/goleak"
)

func TestMemory_CloseStopsJanitor(t *testing.T) {
	// goleak names any goroutine NewMemory leaves behind (and waits for
	// one that is on its way out, so this is not racy).
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	m := store.NewMemory()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	if err := m.Ping(context.Background()); err == nil {
		t.Error("Ping after Close succeeded")
	}
}

func TestMemory_PublishNeverBlocksAndCountsDrops(t *testing.T) {
	m := store.NewMemory()
	t.Cleanup(func() { m.Close() })
	blocked, release := make(chan struct{}), make(chan struct{})
	delivered := make(chan string, 2048)
	storetest.MustSubscribe(t, m, func(msg store.BusMessage) {
		if msg.ID == "first" {
			close(blocked)
			<-release // a slow callback holds up the dispatcher
		}
		delivered <- msg.ID
	})
	storetest.Publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "first"})
	<-blocked
	const queue, extra = 1024, 10
	for range queue + extra { // returns at once although nothing is consumed
		storetest.Publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "more"})
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
	storetest.Publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "early"})
	got, _ := collect(t, m)
	storetest.Publish(t, m, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "late"})
	if msg := storetest.Recv(t, got); msg.ID != "late" {
		t.Errorf("first delivered = %q, want late (nobody was subscribed to early)", msg.ID)
	}
}
