package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrNoStream reports a backend that offers no stream for unsolicited
// messages (it answered the standalone GET with 405).
var ErrNoStream = errors.New("backend offers no notification stream")

// Listen receives the backend's unsolicited notifications
// (notifications/resources/updated, .../list_changed, notifications/message)
// until ctx ends or the stream breaks, passing each to onNotify in order on
// one goroutine. Server-to-client requests on the stream are answered
// automatically (ping, else -32601): no downstream call is waiting for them.
//
// Per-request connections never listen; the gateway instance that holds a
// session's GET stream keeps one listening connection per backend. Listen
// returns why it stopped: ctx's error, ErrNoStream, or an *Error.
//
// onReady, if not nil, is called once the backend has accepted the stream:
// from then on nothing it sends unsolicited is missed.
func (conn *Conn) Listen(ctx context.Context, onNotify func(*jsonrpc.Request), onReady func()) error {
	if !conn.begin() {
		return conn.c.newError("listen", 0, ErrClosed)
	}
	defer conn.end()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(conn.abort, cancel)
	defer stop()
	handle := func(hctx context.Context, msg jsonrpc.Message) {
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return
		}
		if req.IsCall() {
			conn.autoReply(hctx, req)
			return
		}
		onNotify(req)
	}
	if onReady == nil {
		onReady = func() {}
	}
	err := conn.t.listen(lctx, handle, onReady)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// listen opens the standalone GET stream of the backend session.
func (s *streamable) listen(ctx context.Context, handle func(context.Context, jsonrpc.Message), ready func()) error {
	c, op := s.conn.c, "listen"
	hreq, sid, err := s.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return c.newError(op, 0, err)
	}
	hreq.Header.Set("Accept", "text/event-stream")
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return c.requestError(op, err)
	}
	defer hresp.Body.Close()
	switch {
	case hresp.StatusCode == http.StatusMethodNotAllowed:
		return c.newError(op, hresp.StatusCode, ErrNoStream)
	case hresp.StatusCode != http.StatusOK:
		return s.statusError(op, hresp.StatusCode, sid)
	case mediaType(hresp.Header.Get("Content-Type")) != "text/event-stream":
		return c.newError(op, 0, fmt.Errorf("unexpected Content-Type %q", hresp.Header.Get("Content-Type")))
	}
	ready()
	r := newSSEReader(hresp.Body, c.cfg.MaxMessageBytes, 0)
	for {
		ev, err := r.Next()
		if err != nil {
			return c.newError(op, 0, err)
		}
		if ev.Name != "message" || len(ev.Data) == 0 {
			continue
		}
		msg, err := wire.Decode(ev.Data)
		if err != nil {
			return c.newError(op, 0, fmt.Errorf("malformed JSON-RPC message: %w", err))
		}
		handle(ctx, msg)
	}
}

// listen takes the messages of the legacy stream that no call claims.
func (l *legacySSE) listen(ctx context.Context, handle func(context.Context, jsonrpc.Message), ready func()) error {
	l.mu.Lock()
	if l.listener != nil {
		l.mu.Unlock()
		return l.conn.c.newError("listen", 0, errors.New("already listening"))
	}
	l.listener = func(msg jsonrpc.Message) { handle(ctx, msg) }
	l.mu.Unlock()
	ready() // the legacy stream has been open since the handshake
	defer func() {
		l.mu.Lock()
		l.listener = nil
		l.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-l.done:
		return l.conn.c.newError("listen", 0, fmt.Errorf("stream ended: %w", l.err))
	}
}
