package handler

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/store"
)

// A call's answer sent as an event stream: the router sends on it
// (progress, server-to-client requests), each event is logged first so
// the client can resume the call elsewhere (handler/session/call_log.go),
// and keep-alives stop proxies from cutting a quiet call.
//
// One goroutine, the stream's writer, logs and writes every event in the
// order they were queued; senders only queue. So a slow store (the log) or
// a slow client (the write) never stalls the backend's read loop, which
// sends progress as it reads it, and no lock is held across either.

// postStream is the router's view of a POST's SSE stream.
type postStream struct {
	sw *sseWriter
	m  *metrics.Metrics
	// log, when set, logs each event (nil data: a priming event) before it
	// is sent and gives it its SSE id: the stream is then resumable, on
	// any instance.
	log    *session.CallLog
	logCtx context.Context // events are logged after a disconnect too
	errLog *slog.Logger
	// uncounted streams are not counted in m's open streams: a batch's
	// calls share one stream, which the batch counts once.
	uncounted bool

	logged atomic.Bool // the client has been sent an event id: it can resume the call

	mu      sync.Mutex // guards the fields below; never held across I/O
	queue   []outgoing
	wake    chan struct{} // capacity 1: the writer has work
	done    chan struct{} // closed when the writer has returned
	closed  bool          // the call has ended: Send queues nothing more
	last    bool          // finish or end has run: the writer returns once the queue is drained
	writing bool          // the writer runs: the answer is an event stream
	failed  error         // the write that failed: the client has gone
}

// outgoing is one queued event.
type outgoing struct {
	data    []byte // nil with !comment: a priming event
	comment bool   // a keep-alive comment
	start   bool   // only the stream's headers
	final   bool   // the call's answer, the stream's last event
}

func (p *postStream) Send(msg jsonrpc.Message) error {
	data, err := wire.EncodeMessage(msg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return errStreamClosed
	case p.failed != nil:
		return p.failed
	}
	p.queueLocked(outgoing{data: data})
	return nil
}

// queueLocked queues an event, starting the writer (and so the event
// stream) with the first one.
func (p *postStream) queueLocked(o outgoing) {
	p.queue = append(p.queue, o)
	if !p.writing {
		p.writing = true
		if !p.uncounted {
			p.m.StreamOpened(metrics.StreamPOST)
		}
		p.wake = make(chan struct{}, 1)
		p.done = make(chan struct{})
		go p.run(p.wake, p.done)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run is the writer: it writes what is queued, in order, until finish
// or end has run and the queue is empty. Its owner is the call: finish
// waits for it. (It does not stop when the call has merely ended, closed:
// the answer is queued after that, by finish, and a writer gone by then
// would leave the stream without it.)
func (p *postStream) run(wake <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.last {
			p.mu.Unlock()
			<-wake
			p.mu.Lock()
		}
		if len(p.queue) == 0 {
			p.mu.Unlock()
			return // finished and drained
		}
		o := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		if err := p.write(o); err != nil {
			p.mu.Lock()
			if p.failed == nil {
				p.failed = err
			}
			p.mu.Unlock()
		}
	}
}

// write logs an event, if the stream is resumable, and writes it with its
// id. A write that fails after the event was logged is no error: the
// client gets the event when it resumes.
func (p *postStream) write(o outgoing) error {
	switch {
	case o.comment:
		return p.sw.comment("keep-alive")
	case o.start:
		p.sw.start(nil)
		return nil
	}
	var id store.EventID
	if p.log != nil {
		log := p.log.Append
		if o.final {
			log = p.log.End
		}
		lid, err := log(p.logCtx, o.data)
		switch {
		case err != nil:
			p.errLog.Warn("logging a call's event failed; the stream is not resumable past it", "error", err)
		default:
			id = lid
		}
	}
	var retry time.Duration
	if o.data == nil {
		retry = retryAfter // the priming event tells the client how soon to come back
	}
	err := p.sw.event(id, retry, o.data)
	if id != "" {
		p.logged.Store(true)
		return nil
	}
	return err
}

// streaming closes the stream to new events and reports whether the
// answer is an event stream (something was queued): then the answer must
// be sent with finish, which the writer waits for; else the call answers
// plainly.
func (p *postStream) streaming() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return p.writing
}

// finish queues the call's answer as the stream's last event and waits
// until the writer has written everything.
func (p *postStream) finish(data []byte) {
	p.mu.Lock()
	p.closed, p.last = true, true
	p.queueLocked(outgoing{data: data, final: true})
	done := p.done
	p.mu.Unlock()
	<-done
}

// encodeAnswer is a call's answer encoded with the client's id: one that
// cannot be encoded becomes a -32603 error for that id, so that the client
// never goes without an answer (a stream never ends without one).
func encodeAnswer(resp *jsonrpc.Response, rawID json.RawMessage) []byte {
	data, err := wire.EncodeResponseAs(resp, rawID)
	if err != nil {
		data, _ = wire.EncodeResponseAs(&jsonrpc.Response{Error: &jsonrpc.Error{Code: codeInternalError, Message: "cannot encode response"}}, rawID)
	}
	return data
}

// resumable reports whether the client holds an id to resume the call with.
func (p *postStream) resumable() bool { return p.logged.Load() }

// begin starts the event stream before the call runs, with a priming
// event (an id and empty data) when the stream is resumable.
func (p *postStream) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueLocked(outgoing{start: p.log == nil}) // resumable: a priming event
}

// Begin is begin for the router, which starts a stream only once it has
// admitted the request (a subscriptions/listen over a bound is refused
// with an HTTP status of its own).
func (p *postStream) Begin() { p.begin() }

// end waits for the writer, if the stream started one, and uncounts the
// stream. Every path out of a call that may have streamed runs it.
func (p *postStream) end() {
	p.mu.Lock()
	p.closed, p.last = true, true
	writing, done, wake := p.writing, p.done, p.wake
	p.mu.Unlock()
	if !writing {
		return
	}
	select {
	case wake <- struct{}{}: // a writer waiting for work sees last
	default:
	}
	<-done
	if !p.uncounted {
		p.m.StreamClosed(metrics.StreamPOST)
	}
}

// keepAlive queues a comment every interval while the call runs. A call
// still running after one interval is switched to an event stream if it
// was not one yet (the client accepts both): a long tool call must not
// look idle to a proxy that cuts quiet connections. Once the returned
// func has returned, nothing more is queued.
func (p *postStream) keepAlive(interval time.Duration) (stop func()) {
	// A timer, not a goroutine: nearly every call ends before it fires.
	var t *time.Timer
	stopped := false
	tick := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if stopped || p.closed {
			return
		}
		switch {
		case !p.writing && p.log != nil:
			p.queueLocked(outgoing{}) // switching to a stream: prime it
		case len(p.queue) == 0:
			p.queueLocked(outgoing{comment: true})
		}
		t.Reset(interval)
	}
	p.mu.Lock()
	t = time.AfterFunc(interval, tick)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		stopped = true // a tick waiting for the lock now queues nothing
		p.mu.Unlock()
		t.Stop()
	}
}

// batchKeepAlive keeps a batch's shared stream alive: keepAlive on a
// stream of its own (uncounted: the batch counts its stream), whose writer
// the returned func also ends.
func batchKeepAlive(sw *sseWriter, interval time.Duration) (stop func()) {
	p := &postStream{sw: sw, uncounted: true}
	stopTicks := p.keepAlive(interval)
	return func() {
		stopTicks()
		p.end()
	}
}

var errStreamClosed = errors.New("stream closed")
