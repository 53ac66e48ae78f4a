package upstream

import (
	"context"
	"sync"
	"time"
)

// A backend's timeout bounds each exchange with it: how long the gateway
// waits for the backend. It does not bound a person: while a call waits
// on the client (the backend asked for sampling, an elicitation or the
// roots, and the question is with the client), the backend is waiting
// too, so the call's clock stops and resumes when the answer has gone
// back. How long the client may take is the session runtime's bound
// (streams.client_request_timeout), the same for both protocol
// generations.

// callClock is one Call's Config.Timeout, which can be stopped.
type callClock struct {
	mu      sync.Mutex
	timer   *time.Timer   // nil while stopped, or with no timeout
	left    time.Duration // what remains of the timeout when the timer last started
	started time.Time
	holds   int
	expired bool
	expire  func()
}

// startClock bounds ctx by Config.Timeout through a stoppable clock; the
// returned stop releases it.
func (conn *Conn) startClock(ctx context.Context) (context.Context, func()) {
	timeout := conn.c.cfg.Timeout
	cctx, cancel := context.WithCancelCause(ctx)
	if timeout <= 0 {
		return cctx, func() { cancel(context.Canceled) }
	}
	cl := &callClock{left: timeout, started: time.Now()}
	cl.expire = func() { cancel(&timeoutError{timeout}) }
	cl.mu.Lock()
	cl.timer = time.AfterFunc(timeout, cl.fire)
	cl.mu.Unlock()
	conn.mu.Lock()
	if conn.clocks == nil {
		conn.clocks = map[*callClock]struct{}{}
	}
	conn.clocks[cl] = struct{}{}
	if conn.holds > 0 {
		cl.hold()
	}
	conn.mu.Unlock()
	return cctx, func() {
		conn.mu.Lock()
		delete(conn.clocks, cl)
		conn.mu.Unlock()
		cl.mu.Lock()
		if cl.timer != nil {
			cl.timer.Stop()
		}
		cl.mu.Unlock()
		cancel(context.Canceled)
	}
}

func (cl *callClock) fire() {
	cl.mu.Lock()
	if cl.holds > 0 || cl.timer == nil {
		cl.mu.Unlock()
		return // stopped as it fired
	}
	cl.expired = true
	cl.mu.Unlock()
	cl.expire()
}

// hold stops the clock (the first hold).
func (cl *callClock) hold() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.holds++; cl.holds > 1 || cl.expired || cl.timer == nil {
		return
	}
	cl.timer.Stop()
	cl.left -= time.Since(cl.started)
	cl.timer = nil
}

// unhold restarts it with what remained (the last unhold).
func (cl *callClock) unhold() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.holds--; cl.holds > 0 || cl.expired || cl.timer != nil {
		return
	}
	cl.started = time.Now()
	cl.timer = time.AfterFunc(max(cl.left, 0), cl.fire)
}

// AwaitClient tells the connection that one of its calls now waits on the
// client: the backend's timeout stops for every call of the connection
// until release is called. A stdio backend's process counts as waiting
// on a client meanwhile (stdio_pool.go): when the pool already has as
// many processes waiting as it may, AwaitClient fails and the backend's
// request should be refused rather than leave the pool to starve.
// release is idempotent.
func (conn *Conn) AwaitClient() (release func(), err error) {
	var unpool func()
	if w, ok := conn.t.(clientWaiter); ok {
		if unpool, err = w.awaitClient(); err != nil {
			return func() {}, conn.c.newError("client request", 0, err)
		}
	}
	conn.mu.Lock()
	conn.holds++
	for cl := range conn.clocks {
		cl.hold()
	}
	conn.mu.Unlock()
	return sync.OnceFunc(func() {
		conn.mu.Lock()
		conn.holds--
		for cl := range conn.clocks {
			cl.unhold()
		}
		conn.mu.Unlock()
		if unpool != nil {
			unpool()
		}
	}), nil
}

// clientWaiter is a transport with a resource to account for while a call
// waits on the client (a stdio process).
type clientWaiter interface {
	awaitClient() (release func(), err error)
}
