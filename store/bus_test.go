package store_test

// The Bus contract (bus.go), on every store.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
	"go.uber.org/goleak"
)

// busWait bounds every wait for a bus message. It is a failure timeout,
// not a synchronisation delay: tests proceed as soon as the message lands.
const busWait = 5 * time.Second

// collect subscribes a callback that forwards every message to a channel.
func collect(t *testing.T, s store.Store) (<-chan store.BusMessage, func()) {
	t.Helper()
	ch := make(chan store.BusMessage, 64)
	stop := storetest.MustSubscribe(t, s, func(m store.BusMessage) {
		if _, late := closedInstances.Load(m.From); !late {
			ch <- m
		}
	})
	t.Cleanup(stop)
	return ch, stop
}

func TestBus_ReachesEveryInstance(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		a, b := s, s
		if _, ok := s.(*store.Redis); ok {
			b = newRedis(t) // a second gateway on the same Redis and prefix
		}
		for _, st := range []store.Store{a, b} {
			if id := st.InstanceID(); len(id) != 16 || !isHex(id) {
				t.Errorf("InstanceID = %q, want 16 hex characters", id)
			}
		}
		if a != b && a.InstanceID() == b.InstanceID() {
			t.Error("two store handles share an InstanceID")
		}
		// Two callbacks on a, to check registration order too.
		order := make(chan string, 64)
		storetest.MustSubscribe(t, a, func(store.BusMessage) { order <- "first" })
		onA, _ := collect(t, a)
		storetest.MustSubscribe(t, a, func(store.BusMessage) { order <- "third" })
		onB, _ := collect(t, b)

		for _, from := range []store.Store{a, b} {
			msg := store.BusMessage{Kind: store.BusResponse, Session: "s1", ID: "gw-1",
				Data: json.RawMessage(`{"jsonrpc":"2.0","id":"gw-1","result":{}}`), From: "spoofed", To: "x"}
			storetest.Publish(t, from, msg)
			msg.From = from.InstanceID()
			for name, ch := range map[string]<-chan store.BusMessage{"a": onA, "b": onB} {
				if m := storetest.Recv(t, ch); !reflect.DeepEqual(m, msg) {
					t.Errorf("subscriber of %s got %+v, want %+v", name, m, msg)
				}
			}
			if first, third := <-order, <-order; first != "first" || third != "third" {
				t.Errorf("callbacks ran as %s, %s; want registration order", first, third)
			}
		}
	})
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// Stopping a callback is idempotent, and harmless after Close; one
// dispatcher serves every callback; and once Close has returned nothing of
// the bus is left running.
func TestBus_StopIsIdempotentAndCloseLeavesNothingRunning(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		// What runs already (the harness, the memory store's janitor,
		// which TestMemory_CloseStopsJanitor checks) is not the bus's.
		before := goleak.IgnoreCurrent()
		got1, stop1 := collect(t, s)
		if goleak.Find(before) == nil {
			t.Fatal("the first Subscribe started no goroutine: the leak check is broken")
		}
		started := goleak.IgnoreCurrent()
		got2, stop2 := collect(t, s)

		storetest.Publish(t, s, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "1"})
		storetest.Recv(t, got1)
		storetest.Recv(t, got2)

		stop1()
		stop1() // idempotent
		storetest.Publish(t, s, store.BusMessage{Kind: store.BusNotify, Session: "s1", ID: "2"})
		if m := storetest.Recv(t, got2); m.ID != "2" {
			t.Fatalf("got %+v, want message 2", m)
		}
		// Callbacks run in order on one goroutine: a call to the first
		// callback for message 2 would have happened before this point.
		select {
		case m := <-got1:
			t.Errorf("stopped callback received %+v", m)
		default:
		}
		stop2()
		stop2()
		if err := goleak.Find(started); err != nil {
			t.Errorf("goroutines started after the first Subscribe, want its one dispatcher for every callback: %v", err)
		}

		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		stop1() // after Close: still harmless
		// Close has waited for the dispatcher to finish; the goroutine and
		// go-redis' pub/sub goroutines then only have to return, which
		// goleak waits for, bounded.
		goleak.VerifyNone(t, before)
		if _, ok := s.(*store.Redis); ok {
			if !testsupport.Eventually(t, busWait, func() bool { return busSubscribers(t) == 0 }) {
				t.Errorf("%d connections still subscribed to the bus after Close", busSubscribers(t))
			}
		}
		noop := storetest.MustSubscribe(t, s, func(store.BusMessage) { t.Error("callback registered after Close ran") })
		noop()
	})
}

// busSubscribers counts the connections subscribed to the bus channel, on
// every node of target.
func busSubscribers(t *testing.T) int64 {
	t.Helper()
	channel := store.BusChannel(testPrefix)
	var n int64
	for _, node := range target.nodes {
		subs, err := node.PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += subs[channel]
	}
	return n
}
