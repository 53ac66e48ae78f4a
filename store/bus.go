package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
)

// Bus is best-effort broadcast between the gateway instances sharing the
// store: the second half of an exchange can land on another instance than
// the first, and the bus tells the instance concerned (a cancel, a client's
// answer, a new event for the stream it holds, a stream taken over, a
// session ended, a backend's lists changed). What must not be lost is
// written with its message by Marks (or logged by EventLog); the bus only
// makes it quick. The router subscribes once per process and publishes
// from initialize, GET-stream holds, the session stream and the list
// cache; InstanceID names this process in messages and pending requests.
type Bus interface {
	// Publish broadcasts a message, with From set to InstanceID, to every
	// gateway instance sharing the store (this one included). Delivery is
	// best effort: a message can be lost (Redis connection drop, full
	// in-memory queue), which is why cancels and pending requests are also
	// marked in the session.
	Publish(ctx context.Context, msg BusMessage) error
	// Subscribe calls fn for every broadcast message, in order, from one
	// goroutine, until the returned stop func (idempotent) is called. The
	// store keeps one subscription for all callers. fn must not block and
	// must not call Close. A message published after Subscribe returns
	// without error is delivered (barring loss, see Publish); to not miss a
	// cancel or a response, subscribe first, then load the session and
	// check its marks. When ctx ends before the store has confirmed the
	// subscription, Subscribe returns ctx's error, but fn stays registered
	// (stop still unregisters it) and receives messages once the store's
	// connection is up.
	Subscribe(ctx context.Context, fn func(BusMessage)) (stop func(), err error)
	// InstanceID identifies this store handle (one per gateway process).
	InstanceID() string
}

// Bus message kinds.
const (
	// BusCancel: the client cancelled request ID of Session.
	BusCancel = "cancel"
	// BusResponse: the client answered server-to-client request ID; Data
	// is the JSON-RPC response.
	BusResponse = "response"
	// BusNotify: event ID was appended to the session's event log by an
	// instance with no client attached; the instance streaming the
	// session, if any, sends its client what it has not had yet.
	BusNotify = "notify"
	// BusStreamTaken: another instance now holds the session's GET stream.
	BusStreamTaken = "stream-taken"
	// BusSubscriptions: the session's resource subscriptions changed.
	BusSubscriptions = "subscriptions"
	// BusSessionEnded: the session was deleted; its stream holder stops.
	BusSessionEnded = "session-ended"
	// BusListChanged: backend ID ("<vhost>/<key>") announced a list
	// change; instances drop its cached list pages. Session is empty.
	BusListChanged = "list-changed"
)

// BusMessage is what instances tell each other.
type BusMessage struct {
	Kind    string          `json:"k"`
	Session SessionID       `json:"s"`
	ID      string          `json:"i,omitempty"`
	Data    json.RawMessage `json:"d,omitempty"`
	// From is the InstanceID of the publisher.
	From string `json:"f,omitempty"`
	// To, when set, is the only instance meant to act on the message.
	To string `json:"t,omitempty"`
}

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
