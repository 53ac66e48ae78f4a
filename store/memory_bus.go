package store

import (
	"bytes"
	"context"
	"sync/atomic"
)

// memBusQueueSize is how many published messages may wait for the Memory
// bus dispatcher before Publish starts dropping them.
const memBusQueueSize = 1024

// memBus fans published messages out to the callbacks, in process, from
// one dispatcher goroutine fed by a bounded queue.
type memBus struct {
	subs    busSubscribers
	queue   chan BusMessage
	done    chan struct{} // nil until the first Subscribe; guarded by Memory.mu
	dropped atomic.Uint64
}

// InstanceID is 16 random hex characters chosen when the store was created.
func (m *Memory) InstanceID() string { return m.instanceID }

// Publish queues msg, with From set to InstanceID, for the dispatcher and
// returns at once: callbacks never run on the caller's goroutine, and
// Publish never blocks. Before the first Subscribe there is nobody to
// deliver to and the message is discarded (as Redis does). When the queue
// (memBusQueueSize messages) is full, because callbacks are too slow, the
// message is dropped and counted (see DroppedMessages) and Publish still
// returns nil: delivery is best effort, as on Redis (see bus.go).
func (m *Memory) Publish(_ context.Context, msg BusMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	m.enqueueLocked(msg)
	return nil
}

// DroppedMessages counts the messages Publish and MarkCancelled dropped
// because the bus queue was full.
func (m *Memory) DroppedMessages() uint64 { return m.bus.dropped.Load() }

// enqueueLocked queues a copy of msg without blocking. Called with m.mu held.
func (m *Memory) enqueueLocked(msg BusMessage) {
	if m.bus.done == nil {
		return // no dispatcher: nobody has ever subscribed
	}
	msg.From = m.instanceID
	msg.Data = bytes.Clone(msg.Data) // the caller may reuse its buffer
	select {
	case m.bus.queue <- msg:
	default:
		m.bus.dropped.Add(1)
	}
}

// Subscribe registers fn; the first call starts the dispatcher goroutine.
// A message published after Subscribe returns reaches fn. Callbacks run
// on the dispatcher and must not block (see bus.go). After Close,
// Subscribe registers nothing and returns a no-op stop.
func (m *Memory) Subscribe(_ context.Context, fn func(BusMessage)) (stop func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return func() {}, nil
	}
	stop = m.bus.subs.add(fn)
	if m.bus.done == nil {
		m.bus.done = make(chan struct{})
		go m.dispatch(m.bus.done)
	}
	return stop, nil
}

// dispatch delivers queued messages until Close.
func (m *Memory) dispatch(done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-m.stop:
			return
		case msg := <-m.bus.queue:
			m.bus.subs.dispatch(msg)
		}
	}
}
