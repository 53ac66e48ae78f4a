package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// The gateway reads each backend answer whole before it answers the
// client (results are renamed, merged, checked, then written), so
// concurrent large answers add up: five concurrent 15 MB answers took an
// instance from 20 to 207 MB. MaxMessageBytes bounds one answer; a Budget
// bounds them all together.
//
// A Budget is a weighted semaphore of bytes, one per instance. The bytes
// of a backend answer are acquired as they are read off the connection,
// in chunks of at most meterChunk, and charged to the downstream request
// they were read for (its tab, carried by the context from Hold). They are
// released when the handler has written that request's answer, or has
// given up on it (Hold's release func), except the events of a call's
// stream that are not its answer (progress, log messages, server
// requests): those are released as soon as they have been passed on.
//
// Waiting for budget honours the context, so the backend's timeout and
// the client's cancellation bound it; an answer that cannot fit even in
// an empty budget (what the request already holds counted) fails at once
// with an *Error naming the backend, rather than waiting for ever.
//
// Costs: requests that read no backend bytes touch nothing; Hold is one
// small allocation; each chunk read is one semaphore acquire and release.
// The count is of bytes read from backends: the process holds a small
// multiple of it (the decoded copy, the encoded answer), and a stream's
// read-ahead (at most one chunk) is not counted. Messages read for no
// downstream request (GET-stream listeners) are not counted either: they
// are notifications, passed on one at a time.

// meterChunk is the most one read acquires at once, so a large answer
// takes the budget as it arrives rather than all at once.
const meterChunk = 32 << 10

// ErrResponseBudget reports an answer (with what its request already
// holds) larger than the whole in-flight response budget. It is wrapped
// in an *Error naming the backend.
var ErrResponseBudget = errors.New("answer larger than the in-flight response budget")

// Budget bounds the backend answer bytes an instance holds at once. A nil
// *Budget bounds nothing.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	held atomic.Int64
}

// NewBudget returns a budget of size bytes (size must be positive).
func NewBudget(size int64) *Budget {
	return &Budget{sem: semaphore.NewWeighted(size), size: size}
}

// Size is the budget's capacity in bytes.
func (b *Budget) Size() int64 { return b.size }

// Held reports the bytes held now, for metrics and tests.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}

// Hold returns a context under which the backend bytes read are charged
// to one downstream request, and the Held that releases them all: call
// its Release once the request's answer has been written or dropped.
// Reads under the context after Release are not counted. With a nil
// Budget it returns ctx and a nil *Held, whose Release does nothing.
func (b *Budget) Hold(ctx context.Context) (context.Context, *Held) {
	if b == nil {
		return ctx, nil
	}
	h := &Held{Context: ctx, tab: tab{b: b}}
	return h, h
}

// Held is the context of one downstream request's backend reads, with
// the tab they are charged to: one allocation for both.
type Held struct {
	context.Context
	tab tab
}

// Release gives back everything the request holds; it is idempotent and
// safe on a nil *Held.
func (h *Held) Release() {
	if h != nil {
		h.tab.close()
	}
}

type tabKey struct{}

// Value finds the tab; everything else is the parent's.
func (h *Held) Value(key any) any {
	if key == (tabKey{}) {
		return &h.tab
	}
	return h.Context.Value(key)
}

// tab is what one downstream request holds of the budget.
type tab struct {
	b      *Budget
	mu     sync.Mutex
	held   int64
	closed bool // released: later reads are not counted
}

func tabFrom(ctx context.Context) *tab {
	t, _ := ctx.Value(tabKey{}).(*tab)
	return t
}

// acquire takes up to want bytes (at least one) for the tab, waiting for
// them under ctx; it returns how many it took.
func (t *tab) acquire(ctx context.Context, want int64) (int64, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return want, nil
	}
	room := t.b.size - t.held
	t.mu.Unlock()
	if room <= 0 {
		return 0, fmt.Errorf("%w (%d bytes)", ErrResponseBudget, t.b.size)
	}
	n := min(want, room)
	if err := t.b.sem.Acquire(ctx, n); err != nil {
		return 0, &budgetWaitError{cause: context.Cause(ctx)}
	}
	t.mu.Lock()
	if t.closed { // released while we waited
		t.mu.Unlock()
		t.b.sem.Release(n)
		return n, nil
	}
	t.held += n
	t.mu.Unlock()
	t.b.held.Add(n)
	return n, nil
}

// release gives n of the tab's bytes back.
func (t *tab) release(n int64) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.held -= n
	t.mu.Unlock()
	t.b.held.Add(-n)
	t.b.sem.Release(n)
}

// close releases everything the tab holds; later reads are not counted.
func (t *tab) close() {
	t.mu.Lock()
	n := t.held
	t.held, t.closed = 0, true
	t.mu.Unlock()
	if n > 0 {
		t.b.held.Add(-n)
		t.b.sem.Release(n)
	}
}

// budgetWaitError is a wait for budget that the context ended: the
// backend's timeout (its cause says "timed out after ...") or the
// client's cancellation.
type budgetWaitError struct{ cause error }

func (e *budgetWaitError) Error() string {
	return "waiting for the in-flight response budget: " + e.cause.Error()
}
func (e *budgetWaitError) Unwrap() error { return e.cause }

// meteredBody charges what is read from a backend body to a tab. Bytes
// stay charged until settled: keep leaves them to the tab (the answer,
// released with the request), drop gives them back (a message passed on).
type meteredBody struct {
	r   io.Reader
	ctx context.Context
	tab *tab
	n   int64 // charged since the last keep or drop
}

// meter wraps body so that reads under ctx are charged to its tab; with
// no tab (or no budget) it returns body itself and a nil *meteredBody,
// whose keep and drop do nothing.
func meter(ctx context.Context, body io.Reader) (io.Reader, *meteredBody) {
	t := tabFrom(ctx)
	if t == nil {
		return body, nil
	}
	m := &meteredBody{r: body, ctx: ctx, tab: t}
	return m, m
}

func (m *meteredBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return m.r.Read(p)
	}
	if len(p) > meterChunk {
		p = p[:meterChunk]
	}
	got, err := m.tab.acquire(m.ctx, int64(len(p)))
	if err != nil {
		return 0, err
	}
	n, err := m.r.Read(p[:got])
	m.tab.release(got - int64(n))
	m.n += int64(n)
	return n, err
}

// keep leaves what was read so far charged to the request's tab.
func (m *meteredBody) keep() {
	if m != nil {
		m.n = 0
	}
}

// drop gives back what was read so far: it has been passed on.
func (m *meteredBody) drop() {
	if m != nil {
		m.tab.release(m.n)
		m.n = 0
	}
}
