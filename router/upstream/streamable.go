package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "MCP-Protocol-Version"
	headerLastEventID     = "Last-Event-ID"

	// drainWindow is how long we wait, after the call's response, for the
	// backend to end its SSE stream (the spec says it SHOULD) so the TCP
	// connection goes back to the keep-alive pool instead of being dropped.
	drainWindow = 50 * time.Millisecond
	// maxIdleResumes bounds reconnections (GET + Last-Event-ID) that bring
	// no new event, so a backend that keeps dropping the stream cannot keep
	// a call alive forever; the call's timeout bounds the rest.
	maxIdleResumes    = 3
	defaultRetryDelay = time.Second
)

// streamable is the Streamable HTTP transport (2025-03-26 and later): each
// message is a POST; a call's answer comes back as one JSON body or as an
// SSE stream that also carries the call's notifications and
// server-to-client requests. No standalone GET stream is opened: the
// connection lives for one downstream request, so there is nobody to
// deliver unsolicited messages to.
type streamable struct{ conn *Conn }

// newRequest builds a backend request carrying the policy headers, the
// protocol version and the session id (returned, to attribute a 404).
func (s *streamable) newRequest(ctx context.Context, method string, body io.Reader) (*http.Request, string, error) {
	hreq, err := http.NewRequestWithContext(ctx, method, s.conn.c.url.String(), body)
	if err != nil {
		return nil, "", err
	}
	hreq.Header = s.conn.headers.Clone()
	injectTraceHeaders(ctx, s.conn.spanContext(ctx), hreq.Header)
	sid, version, _ := s.conn.state()
	if version != "" {
		hreq.Header.Set(headerProtocolVersion, version)
	}
	if sid != "" {
		hreq.Header.Set(headerSessionID, sid)
	}
	return hreq, sid, nil
}

// encodeMessage is the body of one message to a backend: a request's
// params written as they are (wire.EncodeRequest), anything else through
// the SDK's encoder.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	if req, ok := msg.(*jsonrpc.Request); ok {
		return wire.EncodeRequest(req)
	}
	return jsonrpc.EncodeMessage(msg)
}

// extra are the call's own headers (CallOptions.Headers; nil for
// anything but a call).
func (s *streamable) post(ctx context.Context, msg jsonrpc.Message, extra http.Header) (*http.Response, string, error) {
	c, op := s.conn.c, opOf(msg)
	body, err := encodeMessage(msg)
	if err != nil {
		return nil, "", c.newError(op, 0, err)
	}
	hreq, sid, err := s.newRequest(ctx, http.MethodPost, bytes.NewReader(body))
	if err != nil {
		return nil, "", c.newError(op, 0, err)
	}
	if s.conn.Modern() {
		setModernHeaders(hreq.Header, msg, extra)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json, text/event-stream")
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, sid, c.requestError(op, err)
	}
	return hresp, sid, nil
}

// roundTrip sends req and returns the backend's response. On a connection
// that skipped the handshake (the backend was stateless), an error answer
// may mean the backend keeps sessions now and refused a request that had
// none; issuesSessions tells, and such a refusal is ErrHandshakeRequired.
func (s *streamable) roundTrip(ctx context.Context, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), opts CallOptions) (*jsonrpc.Response, error) {
	resp, err := s.exchange(ctx, req, handle, opts)
	if err == nil && resp.Error != nil && s.conn.expectStateless && !wire.MethodOf(req.Method).Handshake && s.issuesSessions(ctx) {
		return nil, s.conn.c.newError(req.Method, 0, ErrHandshakeRequired)
	}
	return resp, err
}

// exchange is one POST of req and the reading of its answer.
func (s *streamable) exchange(ctx context.Context, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), opts CallOptions) (*jsonrpc.Response, error) {
	c, op := s.conn.c, req.Method
	// reqCtx lets us end the HTTP exchange after a short drain (see drain).
	reqCtx, reqCancel := context.WithCancel(ctx)
	defer reqCancel()
	hresp, sid, err := s.post(reqCtx, req, opts.Headers)
	if err != nil {
		return nil, err
	}
	defer hresp.Body.Close()
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return s.badStatus(req, hresp, sid)
	}
	handshake := wire.MethodOf(req.Method).Handshake
	if s.conn.expectStateless && !handshake {
		if id := hresp.Header.Get(headerSessionID); id != "" {
			s.abandonSession(id)
			return nil, c.newError(op, hresp.StatusCode, ErrHandshakeRequired)
		}
	}
	if handshake {
		if id := hresp.Header.Get(headerSessionID); id != "" {
			if !visibleASCII(id) {
				return nil, c.newError(op, 0, errors.New("malformed Mcp-Session-Id"))
			}
			s.conn.setSessionID(id)
		}
	}
	if hresp.StatusCode == http.StatusAccepted || hresp.StatusCode == http.StatusNoContent {
		return nil, c.newError(op, hresp.StatusCode, errors.New("request accepted without an answer"))
	}
	switch ct := mediaType(hresp.Header.Get("Content-Type")); ct {
	case "application/json":
		return s.readJSON(ctx, req, hresp.Body, handle, opts.ResultCheck)
	case "text/event-stream":
		// reqCtx, not ctx: resumed GETs must end with the exchange too.
		return s.readStream(reqCtx, req, hresp.Body, reqCancel, handle, opts)
	default:
		return nil, c.newError(op, 0, fmt.Errorf("unexpected Content-Type %q", ct))
	}
}

// readJSON handles an application/json answer: one message, or a batch
// array from older servers; anything besides our response is dispatched.
// The body's bytes stay charged to the request's budget tab (see
// response_budget.go) until the request's answer has been written.
func (s *streamable) readJSON(ctx context.Context, req *jsonrpc.Request, body io.Reader, handle func(context.Context, jsonrpc.Message), check func([]byte, int) int) (*jsonrpc.Response, error) {
	c, op := s.conn.c, req.Method
	metered, _ := meter(ctx, body)
	data, err := io.ReadAll(io.LimitReader(metered, int64(c.cfg.MaxMessageBytes)+1))
	if err != nil {
		return nil, c.requestError(op, err)
	}
	if len(data) > c.cfg.MaxMessageBytes {
		return nil, c.newError(op, 0, fmt.Errorf("response body exceeds %d bytes", c.cfg.MaxMessageBytes))
	}
	raws := []json.RawMessage{bytes.TrimSpace(data)}
	if len(raws[0]) > 0 && raws[0][0] == '[' {
		if err := json.Unmarshal(raws[0], &raws); err != nil {
			return nil, c.newError(op, 0, fmt.Errorf("malformed JSON-RPC batch: %w", err))
		}
	}
	var ours *jsonrpc.Response
	for _, raw := range raws {
		msg, err := decodeAnswer(check, raw)
		if err != nil {
			return nil, c.newError(op, 0, fmt.Errorf("malformed JSON-RPC message: %w", err))
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == req.ID && ours == nil {
			ours = r
			continue
		}
		handle(ctx, msg)
	}
	if ours == nil {
		return nil, c.newError(op, 0, errors.New("no response in body"))
	}
	return ours, nil
}

// readStream reads SSE events until the response to req arrives. If the
// stream breaks first and the backend gave event ids, it resumes with GET
// and Last-Event-ID, waiting the backend's retry hint (SEP-1699 lets a
// server close a long call's stream and have the client poll this way).
func (s *streamable) readStream(ctx context.Context, req *jsonrpc.Request, body io.ReadCloser, endReq context.CancelFunc, handle func(context.Context, jsonrpc.Message), opts CallOptions) (*jsonrpc.Response, error) {
	c, op := s.conn.c, req.Method
	var (
		lastID string
		delay  = defaultRetryDelay
		idle   int
	)
	for {
		metered, m := meter(ctx, body)
		r := newSSEReader(metered, c.cfg.MaxMessageBytes, c.sizes.hint(op))
		resp, progressed, fatal, err := s.consume(ctx, r, m, req, handle, opts.ResultCheck)
		r.Recycle()
		if resp != nil {
			c.sizes.note(op, r.Longest())
			opts.Answer.claim(r.Given())
			drain(body, endReq)
			body.Close()
			return resp, nil
		}
		body.Close()
		if fatal || ctx.Err() != nil {
			return nil, c.newError(op, 0, err)
		}
		if id := r.LastEventID(); id != "" {
			lastID = id
		}
		if d, ok := r.Retry(); ok {
			delay = d
		}
		if progressed {
			idle = 0
		} else {
			idle++
		}
		if lastID == "" || idle > maxIdleResumes {
			return nil, c.newError(op, 0, fmt.Errorf("stream ended before the response: %w", err))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, c.newError(op, 0, ctx.Err())
		case <-t.C:
		}
		if body, err = s.resume(ctx, op, lastID); err != nil {
			return nil, err
		}
	}
}

// consume reads events until our response (returned), the end of the
// stream, or a fatal protocol error (fatal=true: resuming cannot help).
// The response's bytes stay charged to the request's budget tab (m);
// every other message's are given back once handle has passed it on.
func (s *streamable) consume(ctx context.Context, r *sseReader, m *meteredBody, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), check func([]byte, int) int) (resp *jsonrpc.Response, progressed, fatal bool, err error) {
	for {
		ev, err := r.Next()
		if err != nil {
			return nil, progressed, errors.Is(err, errEventTooLarge) || errors.Is(err, ErrResponseBudget), err
		}
		progressed = true
		if ev.Name != "message" || len(ev.Data) == 0 {
			continue // e.g. a priming event that only carries an id
		}
		msg, err := decodeAnswer(check, ev.Data)
		if err != nil {
			return nil, progressed, true, fmt.Errorf("malformed JSON-RPC message: %w", err)
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == req.ID {
			m.keep()
			return r, progressed, false, nil
		}
		handle(ctx, msg)
		m.drop()
	}
}

// resume reopens a broken call stream with GET and Last-Event-ID.
func (s *streamable) resume(ctx context.Context, op, lastID string) (io.ReadCloser, error) {
	c := s.conn.c
	hreq, sid, err := s.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, c.newError(op, 0, err)
	}
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set(headerLastEventID, lastID)
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, c.requestError(op, err)
	}
	if hresp.StatusCode != http.StatusOK || mediaType(hresp.Header.Get("Content-Type")) != "text/event-stream" {
		hresp.Body.Close()
		return nil, s.statusError(op, hresp.StatusCode, sid)
	}
	return hresp.Body, nil
}

// badStatus turns a non-2xx answer into an error, unless its body is a
// JSON-RPC error answering our request: that is the backend's answer and
// passes through as the Response.
func (s *streamable) badStatus(req *jsonrpc.Request, hresp *http.Response, sid string) (*jsonrpc.Response, error) {
	data, _ := io.ReadAll(io.LimitReader(hresp.Body, maxErrorBody))
	if msg, err := wire.Decode(bytes.TrimSpace(data)); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == req.ID && r.Error != nil {
			return r, nil
		}
	}
	return nil, s.statusError(req.Method, hresp.StatusCode, sid)
}

// statusError reports a bad status; 404 to a request that carried a
// session id means the backend forgot the session.
func (s *streamable) statusError(op string, status int, sid string) error {
	if status == http.StatusNotFound && sid != "" {
		s.conn.markSessionGone()
		return s.conn.c.newError(op, status, ErrSessionGone)
	}
	return s.conn.c.newError(op, status, nil)
}

func (s *streamable) send(ctx context.Context, msg jsonrpc.Message) error {
	hresp, sid, err := s.post(ctx, msg, nil)
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	if hresp.ContentLength >= 0 && hresp.ContentLength <= maxErrorBody {
		_, _ = io.Copy(io.Discard, hresp.Body) // bounded: lets the connection be reused
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return s.statusError(opOf(msg), hresp.StatusCode, sid)
	}
	return nil
}

// close ends the backend session with DELETE unless it is kept, absent
// (stateless backend) or already gone. 404 and 405 count as success: the
// session is gone, or the server does not let clients end sessions.
func (s *streamable) close(keep bool) error {
	sid, _, gone := s.conn.state()
	if keep || sid == "" || gone {
		return nil
	}
	c, op := s.conn.c, "DELETE"
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	hreq, _, err := s.newRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return c.newError(op, 0, err)
	}
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return c.newError(op, 0, &timeoutError{cleanupTimeout})
		}
		return c.requestError(op, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, maxErrorBody))
	hresp.Body.Close()
	switch {
	case hresp.StatusCode >= 200 && hresp.StatusCode <= 299,
		hresp.StatusCode == http.StatusNotFound,
		hresp.StatusCode == http.StatusMethodNotAllowed:
		return nil
	}
	return c.newError(op, hresp.StatusCode, nil)
}

// drain gives the backend a moment to end the stream after our response
// so the connection can be reused; then it ends the exchange regardless.
func drain(body io.Reader, endReq context.CancelFunc) {
	t := time.AfterFunc(drainWindow, endReq)
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxErrorBody))
}

func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return mt
}

// visibleASCII reports whether s is a valid session id (0x21-0x7E).
func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7E {
			return false
		}
	}
	return s != ""
}

// issuesSessions reports whether the backend keeps sessions now, by the
// signal the snapshot's "stateless" came from: whether it answers an
// initialize with an Mcp-Session-Id. It runs only when a backend thought
// stateless answers a request sent without a handshake with an error,
// since a stateful backend refuses such a request without running it, and
// the answer alone does not tell the two apart: the go-sdk answers HTTP
// 200 with a JSON-RPC error of code 0, the code any failing handler of a
// stateless go-sdk server gets too. (Backends that answer 400 or 404, as
// the transport spec asks, are caught by their status; see
// router.refusedFastPath.) Retrying a request the backend did run would
// run it twice, so anything short of a session id (no answer, a failure,
// none issued) keeps the error as the backend's answer. The session the
// initialize opens is ended at once, in the background; nothing is sent on
// it.
func (s *streamable) issuesSessions(ctx context.Context) bool {
	_, version, _ := s.conn.state()
	params, err := initializeParams(Handshake{ProtocolVersion: version})
	if err != nil {
		return false
	}
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hresp, _, err := s.post(reqCtx, s.conn.newCall(reqCtx, "initialize", params), nil)
	if err != nil {
		return false
	}
	defer hresp.Body.Close()
	id := hresp.Header.Get(headerSessionID)
	drain(hresp.Body, cancel)
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 || id == "" {
		return false
	}
	s.abandonSession(id)
	return true
}

// abandonSession ends, best effort and in the background, a session a
// backend opened for a request that skipped the handshake, so it does not
// linger on the backend until its idle timeout.
func (s *streamable) abandonSession(id string) {
	if !visibleASCII(id) {
		return
	}
	c := s.conn.c
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		hreq, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url.String(), nil)
		if err != nil {
			return
		}
		hreq.Header = s.conn.headers.Clone()
		hreq.Header.Set(headerSessionID, id)
		if hresp, err := c.hc.Do(hreq); err == nil {
			hresp.Body.Close()
		}
	}()
}
