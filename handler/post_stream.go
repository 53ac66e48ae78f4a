package handler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/session"

	"github.com/mcpgw/gateway/handler/metrics"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A call's answer sent as an event stream: the router sends on it
// (progress, server-to-client requests), each event is logged first so
// the client can resume the call elsewhere (router/call_resume.go), and
// keep-alives stop proxies from cutting a quiet call.

// postStream is the router's view of a POST's SSE stream.
type postStream struct {
	sw *sseWriter
	m  *metrics.Metrics
	// log, when set, logs each event (nil data: a priming event) before it
	// is sent and gives it its SSE id: the stream is then resumable, on
	// any instance (router/call_resume.go).
	log    *session.CallLog
	logCtx context.Context // events are logged after a disconnect too
	errLog *slog.Logger
	mu     sync.Mutex
	closed bool
	opened bool // counted in m's open streams
	logged bool // the client holds an event id: it can resume the call
}

func (p *postStream) Send(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errStreamClosed
	}
	p.openedLocked()
	return p.writeLocked(data, false)
}

// writeLocked logs data, if the stream is resumable, and writes it with
// its id. A write that fails after the event was logged is no error: the
// client gets the event when it resumes. final marks the call's answer,
// the stream's last event.
func (p *postStream) writeLocked(data []byte, final bool) error {
	id := ""
	if p.log != nil {
		log := p.log.Append
		if final {
			log = p.log.End
		}
		lid, err := log(p.logCtx, data)
		switch {
		case err != nil:
			p.errLog.Warn("logging a call's event failed; the stream is not resumable past it", "error", err)
		default:
			id = lid
		}
	}
	var retry time.Duration
	if data == nil {
		retry = retryAfter // the priming event tells the client how soon to come back
	}
	err := p.sw.event(id, retry, data)
	if id != "" {
		p.logged = true
		return nil
	}
	return err
}

// finish writes the call's answer as the stream's last event.
func (p *postStream) finish(data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.writeLocked(data, true)
}

// resumable reports whether the client holds an id to resume the call with.
func (p *postStream) resumable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logged
}

// begin starts the event stream before the call runs, with a priming
// event (an id and empty data) when the stream is resumable.
func (p *postStream) begin() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openedLocked()
	p.sw.start(nil)
	if p.log != nil {
		_ = p.writeLocked(nil, false)
	}
}

// openedLocked counts the stream as open the first time an event (or
// begin) starts it: most POSTs that accept SSE never stream at all.
func (p *postStream) openedLocked() {
	if !p.opened {
		p.opened = true
		p.m.StreamOpened(metrics.StreamPOST)
	}
}

// end uncounts the stream once its last event is written.
func (p *postStream) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opened {
		p.m.StreamClosed(metrics.StreamPOST)
	}
}

// keepAlive writes a comment every interval while the call runs. A call
// still running after one interval is switched to an event stream if it
// was not one yet (the client accepts both): a long tool call must not
// look idle to a proxy that cuts quiet connections. Once the returned
// func has returned, nothing more is written.
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
		p.openedLocked()
		if !p.sw.isStarted() && p.log != nil {
			_ = p.writeLocked(nil, false) // switching to a stream: prime it
		} else {
			_ = p.sw.comment("keep-alive")
		}
		t.Reset(interval)
	}
	p.mu.Lock()
	t = time.AfterFunc(interval, tick)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		stopped = true // a tick waiting for the lock now writes nothing
		p.mu.Unlock()
		t.Stop()
	}
}

func (p *postStream) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

var errStreamClosed = errors.New("stream closed")
