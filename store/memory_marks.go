package store

import (
	"bytes"
	"context"
	"maps"
	"time"
)

// MarkCancelled sets the mark and queues msg (From set to InstanceID)
// under one lock, so a reader either sees the mark or the message is
// queued after it. Like the Redis store it drops expired marks, and the
// oldest live ones past MaxCancelMarks, and marks no id over
// MaxCancelIDBytes. On a missing session it queues nothing: ErrNotFound.
func (m *Memory) MarkCancelled(_ context.Context, id SessionID, reqID string, msg BusMessage, markTTL, ttl time.Duration) error {
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
func (m *Memory) ClearCancelled(_ context.Context, id SessionID, reqID string) error {
	return m.deleteField(id, func(ms *memSession) { delete(ms.cancelled, reqID) })
}

// AddPending records which instance waits for requestID. ErrNotFound if
// the session is absent.
func (m *Memory) AddPending(_ context.Context, id SessionID, requestID ServerRequestID, instance string, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		ms.pending[requestID] = instance
		return nil
	})
}

// RemovePending forgets requestID; a missing session or entry is not an
// error. The expiry is left alone.
func (m *Memory) RemovePending(_ context.Context, id SessionID, requestID ServerRequestID) error {
	return m.deleteField(id, func(ms *memSession) {
		delete(ms.pending, requestID)
		delete(ms.answers, requestID)
	})
}

// PostAnswer stores the answer and queues msg under one lock, while
// requestID is pending; ErrNotFound otherwise.
func (m *Memory) PostAnswer(_ context.Context, id SessionID, requestID ServerRequestID, data []byte, msg BusMessage, ttl time.Duration) error {
	return m.update(id, ttl, func(ms *memSession) error {
		if _, ok := ms.pending[requestID]; !ok {
			return ErrNotFound
		}
		if ms.answers == nil {
			ms.answers = make(map[ServerRequestID][]byte)
		}
		ms.answers[requestID] = bytes.Clone(data)
		m.enqueueLocked(msg)
		return nil
	})
}

// TakeAnswer returns and forgets the stored answer, if any.
func (m *Memory) TakeAnswer(_ context.Context, id SessionID, requestID ServerRequestID) ([]byte, error) {
	var out []byte
	err := m.deleteField(id, func(ms *memSession) {
		out = ms.answers[requestID]
		delete(ms.answers, requestID)
	})
	return out, err
}

func (m *Memory) deleteField(id SessionID, del func(*memSession)) error {
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
