package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// legacySSE is the HTTP+SSE transport of protocol 2024-11-05: a GET opens
// the event stream, whose first "endpoint" event names where to POST
// messages; every answer and server message comes back on that one
// stream. One reader goroutine per connection demultiplexes it by request
// id, and Close waits for it, so no goroutine outlives the connection.
type legacySSE struct {
	conn     *Conn
	endpoint string // the POST URL, checked to be same-origin
	body     io.ReadCloser
	ctx      context.Context // the GET's lifetime
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the reader and its auto-reply helpers
	done     chan struct{}  // closed when the reader stops
	err      error          // why the reader stopped; read after done

	mu      sync.Mutex
	seq     uint64
	pending map[jsonrpc.ID]*pendingCall
	// listener takes notifications no call claims, while Listen runs.
	listener func(jsonrpc.Message)
}

// pendingCall is one in-flight call waiting for messages from the stream.
type pendingCall struct {
	seq   uint64
	token string // the call's progress token (compact JSON), if any
	ch    chan jsonrpc.Message
	done  chan struct{} // closed when the call stops listening
}

// openLegacySSE opens the GET stream and reads the endpoint event. ctx
// bounds only this opening; the stream itself lives until close.
func openLegacySSE(ctx context.Context, conn *Conn) (*legacySSE, error) {
	c, op := conn.c, "open"
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	fail := func(body io.Closer, err error) (*legacySSE, error) {
		stop()
		cancel()
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(streamCtx, http.MethodGet, c.url.String(), nil)
	if err != nil {
		return fail(nil, c.newError(op, 0, err))
	}
	hreq.Header = conn.headers.Clone()
	injectTraceHeaders(streamCtx, conn.spanContext(streamCtx), hreq.Header)
	hreq.Header.Set("Accept", "text/event-stream")
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return fail(nil, c.requestError(op, err))
	}
	if hresp.StatusCode != http.StatusOK {
		return fail(hresp.Body, c.newError(op, hresp.StatusCode, nil))
	}
	if ct := mediaType(hresp.Header.Get("Content-Type")); ct != "text/event-stream" {
		return fail(hresp.Body, c.newError(op, 0, fmt.Errorf("unexpected Content-Type %q", ct)))
	}
	// The stream is read under streamCtx, which keeps ctx's values: the
	// budget tab of the request that opened this per-request connection.
	metered, m := meter(streamCtx, hresp.Body)
	r := newSSEReader(metered, c.cfg.MaxMessageBytes, 0)
	ev, err := r.Next()
	if err != nil {
		return fail(hresp.Body, c.newError(op, 0, fmt.Errorf("reading endpoint event: %w", err)))
	}
	if ev.Name != "endpoint" {
		return fail(hresp.Body, c.newError(op, 0, fmt.Errorf("first event is %q, want \"endpoint\"", ev.Name)))
	}
	ep, err := resolveEndpoint(c.url, string(ev.Data))
	if err != nil {
		return fail(hresp.Body, c.newError(op, 0, err))
	}
	if !stop() { // ctx ended meanwhile and cancelled the stream
		return fail(hresp.Body, c.contextError(op, ctx))
	}
	l := &legacySSE{
		conn:     conn,
		endpoint: ep.String(),
		body:     hresp.Body,
		ctx:      streamCtx,
		cancel:   cancel,
		done:     make(chan struct{}),
		pending:  make(map[jsonrpc.ID]*pendingCall),
	}
	m.drop() // the endpoint event
	l.wg.Add(1)
	go l.readLoop(r, m)
	return l, nil
}

// resolveEndpoint resolves the endpoint event against the SSE URL and
// requires the same origin: otherwise a backend could make the gateway
// POST, with the add_headers credentials, to a host of its choosing.
func resolveEndpoint(base *url.URL, raw string) (*url.URL, error) {
	u, err := base.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errors.New("malformed endpoint event")
	}
	if u.User != nil || !strings.EqualFold(u.Scheme, base.Scheme) ||
		!strings.EqualFold(u.Hostname(), base.Hostname()) || portOf(u) != portOf(base) {
		return nil, errors.New("endpoint event points to another origin")
	}
	return u, nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func (l *legacySSE) readLoop(r *sseReader, m *meteredBody) {
	defer l.wg.Done()
	l.err = l.read(r, m)
	close(l.done) // publishes l.err
}

// read demultiplexes the stream. A response's bytes stay charged to the
// budget tab (its call holds it until the answer is written downstream);
// every other message's are given back once routed.
func (l *legacySSE) read(r *sseReader, m *meteredBody) error {
	for {
		ev, err := r.Next()
		if err != nil {
			return err
		}
		if ev.Name != "message" || len(ev.Data) == 0 {
			continue
		}
		msg, err := wire.Decode(ev.Data)
		if err != nil {
			return fmt.Errorf("malformed JSON-RPC message: %w", err)
		}
		if !l.route(msg) {
			return context.Canceled
		}
		if _, isResponse := msg.(*jsonrpc.Response); isResponse {
			m.keep()
		} else {
			m.drop()
		}
	}
}

// route hands msg to the call it belongs to: a response by id, progress by
// its token, any other message to the oldest in-flight call (per-request
// connections rarely run more than one). A server request nobody takes is
// answered so the backend does not wait. It reports false once closing.
func (l *legacySSE) route(msg jsonrpc.Message) bool {
	p := l.target(msg)
	if p != nil {
		select {
		case p.ch <- msg:
			return true
		case <-p.done:
		case <-l.ctx.Done():
			return false
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() {
		l.mu.Lock()
		fn := l.listener
		l.mu.Unlock()
		if fn != nil {
			fn(msg)
		}
		return true
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		l.wg.Add(1) // the reader holds the group, so this cannot race Wait
		go func() {
			defer l.wg.Done()
			l.conn.autoReply(l.ctx, req)
		}()
	}
	return true
}

func (l *legacySSE) target(msg jsonrpc.Message) *pendingCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		return l.pending[m.ID]
	case *jsonrpc.Request:
		if wire.NotificationOf(m.Method).Progress {
			if tok := progressToken(m.Params, false); tok != "" {
				for _, p := range l.pending {
					if p.token == tok {
						return p
					}
				}
			}
		}
	}
	var oldest *pendingCall
	for _, p := range l.pending {
		if oldest == nil || p.seq < oldest.seq {
			oldest = p
		}
	}
	return oldest
}

func (l *legacySSE) roundTrip(ctx context.Context, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), _ CallOptions) (*jsonrpc.Response, error) {
	c, op := l.conn.c, req.Method
	l.mu.Lock()
	l.seq++
	p := &pendingCall{seq: l.seq, token: progressToken(req.Params, true), ch: make(chan jsonrpc.Message, 16), done: make(chan struct{})}
	l.pending[req.ID] = p // before the POST: the answer may overtake its 202
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, req.ID)
		l.mu.Unlock()
		close(p.done)
	}()

	if err := l.send(ctx, req); err != nil {
		return nil, err
	}
	take := func(msg jsonrpc.Message) *jsonrpc.Response {
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == req.ID {
			return r
		}
		handle(ctx, msg)
		return nil
	}
	for {
		select {
		case msg := <-p.ch:
			if r := take(msg); r != nil {
				return r, nil
			}
		case <-l.done:
			for { // the reader stopped: take what it delivered first
				select {
				case msg := <-p.ch:
					if r := take(msg); r != nil {
						return r, nil
					}
				default:
					return nil, c.newError(op, 0, fmt.Errorf("event stream ended before the response: %w", l.err))
				}
			}
		case <-ctx.Done():
			return nil, c.newError(op, 0, ctx.Err())
		}
	}
}

// send POSTs one message to the endpoint; the answer, if any, comes on
// the stream, so only the status matters.
func (l *legacySSE) send(ctx context.Context, msg jsonrpc.Message) error {
	c, op := l.conn.c, opOf(msg)
	body, err := encodeMessage(msg)
	if err != nil {
		return c.newError(op, 0, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint, bytes.NewReader(body))
	if err != nil {
		return c.newError(op, 0, err)
	}
	hreq.Header = l.conn.headers.Clone()
	injectTraceHeaders(ctx, l.conn.spanContext(ctx), hreq.Header)
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return c.requestError(op, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, maxErrorBody))
	hresp.Body.Close()
	switch {
	case hresp.StatusCode >= 200 && hresp.StatusCode <= 299:
		return nil
	case hresp.StatusCode == http.StatusNotFound:
		return c.newError(op, hresp.StatusCode, ErrSessionGone) // the stream's session is gone
	default:
		return c.newError(op, hresp.StatusCode, nil)
	}
}

// close ends the GET stream and waits for the reader; keep has no meaning
// here, as the legacy session cannot outlive its stream.
func (l *legacySSE) close(bool) error {
	l.cancel()
	l.body.Close()
	l.wg.Wait()
	return nil
}

// progressToken extracts a progress token as compact JSON: from a
// request's params._meta (inMeta) or a progress notification's params.
func progressToken(params json.RawMessage, inMeta bool) string {
	if len(params) == 0 {
		return ""
	}
	var tok json.RawMessage
	if inMeta {
		var p struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(params, &p) != nil {
			return ""
		}
		tok = p.Meta.ProgressToken
	} else {
		var p struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(params, &p) != nil {
			return ""
		}
		tok = p.ProgressToken
	}
	var b bytes.Buffer
	if len(tok) == 0 || json.Compact(&b, tok) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}
