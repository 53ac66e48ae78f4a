package store

import (
	"bytes"
	"context"
	"maps"
	"sync/atomic"
	"time"
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

// MarkCancelled sets the mark and queues msg (From set to InstanceID)
// under one lock, so a reader either sees the mark or the message is
// queued after it. Like the Redis store it drops expired marks, and the
// oldest live ones past MaxCancelMarks, and marks no id over
// MaxCancelIDBytes. On a missing session it queues nothing: ErrNotFound.
func (m *Memory) MarkCancelled(_ context.Context, id, reqID string, msg BusMessage, markTTL, ttl time.Duration) error {
	if err := checkTTL(markTTL); err != nil {
		return err
	}
	return m.update(id, ttl, func(ms *memSession) error {
		if markable(reqID) {
			now := time.Now()
			delete(ms.cancelled, reqID)
			maps.DeleteFunc(ms.cancelled, func(_ string, expires time.Time) bool { return !expires.After(now) })
			for len(ms.cancelled) >= MaxCancelMarks {
				oldest := ""
				for k, expires := range ms.cancelled {
					if oldest == "" || expires.Before(ms.cancelled[oldest]) {
						oldest = k
					}
				}
				delete(ms.cancelled, oldest)
			}
			ms.cancelled[reqID] = now.Add(markTTL)
		}
		m.enqueueLocked(msg)
		return nil
	})
}

// liveMarks returns the ids whose cancel marks have not expired at now,
// or nil if none has.
func (ms *memSession) liveMarks(now time.Time) map[string]bool {
	var live map[string]bool
	for reqID, expires := range ms.cancelled {
		if expires.After(now) {
			if live == nil {
				live = make(map[string]bool, len(ms.cancelled))
			}
			live[reqID] = true
		}
	}
	return live
}

// ClearCancelled removes the mark; a missing session or mark is not an
// error. The expiry is left alone.
func (m *Memory) ClearCancelled(_ context.Context, id, reqID string) error {
	return m.deleteField(id, func(ms *memSession) { delete(ms.cancelled, reqID) })
}

// AddPending records which instance waits for requestID. ErrNotFound if
// the session is absent.
func (m *Memory) AddPending(_ context.Context, id, requestID, instance string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		ms.pending[requestID] = instance
		return nil
	})
}

// RemovePending forgets requestID; a missing session or entry is not an
// error. The expiry is left alone.
func (m *Memory) RemovePending(_ context.Context, id, requestID string) error {
	return m.deleteField(id, func(ms *memSession) {
		delete(ms.pending, requestID)
		delete(ms.answers, requestID)
	})
}

// PostAnswer stores the answer and queues msg under one lock, while
// requestID is pending; ErrNotFound otherwise.
func (m *Memory) PostAnswer(_ context.Context, id, requestID string, data []byte, msg BusMessage, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		if _, ok := ms.pending[requestID]; !ok {
			return ErrNotFound
		}
		if ms.answers == nil {
			ms.answers = make(map[string][]byte)
		}
		ms.answers[requestID] = bytes.Clone(data)
		m.enqueueLocked(msg)
		return nil
	})
}

// TakeAnswer returns and forgets the stored answer, if any.
func (m *Memory) TakeAnswer(_ context.Context, id, requestID string) ([]byte, error) {
	var out []byte
	err := m.deleteField(id, func(ms *memSession) {
		out = ms.answers[requestID]
		delete(ms.answers, requestID)
	})
	return out, err
}

func (m *Memory) deleteField(id string, del func(*memSession)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	if ms := m.liveSession(id, time.Now()); ms != nil {
		del(ms)
	}
	return nil
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
func (m *Memory) Subscribe(fn func(BusMessage)) (stop func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return func() {}
	}
	stop = m.bus.subs.add(fn)
	if m.bus.done == nil {
		m.bus.done = make(chan struct{})
		go m.dispatch(m.bus.done)
	}
	return stop
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
