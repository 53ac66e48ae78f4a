package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
)

// This file holds what both implementations share for the instance bus
// (Publish / Subscribe).
//
// Bus delivery contract, for both stores:
//
//   - Callbacks run one after another, in registration order, on a single
//     dispatcher goroutine owned by the store. They must not block (hand
//     work to another goroutine), and must not call Close: Close waits for
//     the dispatcher. They may call Subscribe, stop funcs and any other
//     store method.
//   - Every callback gets its own copy of the message (Data included).
//   - Delivery is best effort. The Redis bus loses messages published while
//     this instance's subscription connection is down (go-redis reconnects
//     and resubscribes by itself), and the Memory bus drops messages when
//     its queue is full. That is why cancellations and pending responses
//     are also recorded in the session hash (MarkCancelled, AddPending):
//     a waiter must subscribe first and then load the session, so it either
//     receives the broadcast or sees the mark.
//   - A stop func may be called more than once, from any goroutine
//     (including from inside a callback). It does not wait for a call
//     in progress, and a message whose dispatch had already begun when stop
//     was called may still reach the callback once; later messages do not.

// busSubscribers is the ordered set of bus callbacks of one store. The
// slice is copy-on-write, so dispatch iterates it without holding mu.
type busSubscribers struct {
	mu   sync.Mutex
	subs []*busSub
}

type busSub struct {
	fn      func(BusMessage)
	stopped atomic.Bool
}

// add registers fn and returns the func that unregisters it.
func (b *busSubscribers) add(fn func(BusMessage)) (stop func()) {
	s := &busSub{fn: fn}
	b.mu.Lock()
	b.subs = append(b.subs[:len(b.subs):len(b.subs)], s)
	b.mu.Unlock()
	return func() {
		if s.stopped.Swap(true) {
			return // idempotent
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		i := -1
		for j, x := range b.subs {
			if x == s {
				i = j
				break
			}
		}
		if i >= 0 {
			next := make([]*busSub, 0, len(b.subs)-1)
			b.subs = append(append(next, b.subs[:i]...), b.subs[i+1:]...)
		}
	}
}

// dispatch calls every registered callback, in order, with its own copy of msg.
func (b *busSubscribers) dispatch(msg BusMessage) {
	b.mu.Lock()
	subs := b.subs
	b.mu.Unlock()
	for _, s := range subs {
		if s.stopped.Load() {
			continue
		}
		m := msg
		m.Data = bytes.Clone(msg.Data)
		s.fn(m)
	}
}

// newInstanceID returns 16 random hex characters.
func newInstanceID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("store: instance id: " + err.Error()) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}
