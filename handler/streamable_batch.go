package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/store"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC batches belong to protocol 2025-03-26 only: 2025-06-18 removed
// them. A 2025-03-26 client may POST an array of requests, notifications
// and responses; the gateway handles the notifications and responses
// first, in order, then runs the requests concurrently, at most
// batchParallel of them at once. Protocol 2026-07-28 has no batches (nor
// the session they run on): a batch sent as that revision is refused
// saying so, not asked for a session.
//
// A batch is bounded twice, because one POST must not cost the gateway
// more than a client could get by sending requests one by one: its length
// (Options.MaxBatch, config max_batch, default 50; a longer batch is
// refused whole, -32600 with HTTP 400, before anything runs), and how many
// of its calls run at once (batchParallel). Unbounded, a batch of 150
// calls opened 150 backend connections at once, and 53,000 elements fit
// in the default body limit.
//
// The answer is a JSON array of the requests' responses, in the batch's
// order, when the client accepts application/json; calls in such a batch
// cannot stream (no progress, no server-to-client requests), as there is
// no stream to carry them. A client that accepts only text/event-stream
// gets one SSE stream that every call of the batch shares: progress and
// server requests as they happen, each response as its call ends.

// DefaultMaxBatch is Options.MaxBatch's default.
const DefaultMaxBatch = 50

// batchParallel is how many of a batch's calls run at once: enough that a
// batch of quick calls is not serialised behind one slow call, few enough
// that a batch holds a handful of backend connections, like a client
// pipelining its requests would.
const batchParallel = 8

func isBatch(body []byte) bool {
	t := bytes.TrimSpace(body)
	return len(t) > 0 && t[0] == '['
}

// batchMessage is one decoded element of a batch, with its id as the
// client wrote it (echoed byte for byte).
type batchMessage struct {
	msg   jsonrpc.Message
	rawID json.RawMessage
}

// decodeBatch parses a batch of at most max messages. The elements are
// counted as they are read, so an overlong batch is refused without
// decoding it all.
func decodeBatch(body []byte, max int) ([]batchMessage, *decodeError) {
	raws, derr := splitBatch(body, max)
	if derr != nil {
		return nil, derr
	}
	if len(raws) == 0 {
		return nil, &decodeError{codeInvalidRequest, "empty JSON-RPC batch"}
	}
	msgs := make([]batchMessage, len(raws))
	for i, raw := range raws {
		if isBatch(raw) {
			return nil, &decodeError{codeInvalidRequest, fmt.Sprintf("batch element %d: batches do not nest", i)}
		}
		m, rawID, derr := decodeMessage(raw)
		if derr != nil {
			return nil, &decodeError{derr.code, fmt.Sprintf("batch element %d: %s", i, derr.msg)}
		}
		if req, ok := m.(*jsonrpc.Request); ok && wire.MethodOf(req.Method).Handshake {
			return nil, &decodeError{codeInvalidRequest, "initialize must not be part of a JSON-RPC batch"}
		}
		msgs[i] = batchMessage{m, rawID}
	}
	return msgs, nil
}

// splitBatch returns the elements of the JSON array body, or an error once
// it holds more than max of them.
func splitBatch(body []byte, max int) ([]json.RawMessage, *decodeError) {
	notJSON := &decodeError{codeParseError, "request body is not valid JSON"}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, notJSON
	}
	var raws []json.RawMessage
	for dec.More() {
		if len(raws) == max {
			return nil, &decodeError{codeInvalidRequest, fmt.Sprintf("a JSON-RPC batch may hold at most %d messages (max_batch); send more as separate requests", max)}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notJSON
		}
		raws = append(raws, raw)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, notJSON
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notJSON // something after the array
	}
	return raws, nil
}

// refuseModernBatch answers a batch sent as protocol 2026-07-28, which
// has none (nor the session a batch would need): 400 -32600 saying so,
// rather than asking for a session the revision does not have.
func refuseModernBatch(w http.ResponseWriter) {
	writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest,
		"JSON-RPC batches are not part of protocol "+wire.ModernProtocolVersion+": send each request in a POST of its own")
}

// modernElements reports whether a batch holds a request whose _meta
// names a protocol version: one a 2026-07-28 client sent.
func modernElements(msgs []batchMessage) bool {
	for _, bm := range msgs {
		if req, ok := bm.msg.(*jsonrpc.Request); ok {
			if meta, ok := paramsMeta(req.Params); ok && meta.ProtocolVersion != nil {
				return true
			}
		}
	}
	return false
}

// serveBatch handles a POSTed batch; the body has been read and checked
// for size, content type and Accept.
func (s *server) serveBatch(w http.ResponseWriter, r *http.Request, body []byte, jsonOK, sseOK bool) {
	metrics.SetRPCMethod(r.Context(), "batch")
	noteOf(w).setRequest("batch", nil)
	if modernHeaderVersion(r.Header.Values(headerProtocolVersion)) {
		refuseModernBatch(w)
		return
	}
	if refuseRepeatedVersion(w, r.Header) {
		return
	}
	msgs, derr := decodeBatch(body, s.opts.MaxBatch)
	if derr != nil {
		writeHTTPError(w, http.StatusBadRequest, derr.code, derr.msg)
		return
	}
	if r.Header.Get(headerSessionID) == "" && modernElements(msgs) {
		refuseModernBatch(w)
		return
	}
	principal, _ := auth.FromContext(r.Context())
	sess, ok := s.loadSession(w, r, principal)
	if !ok {
		return
	}
	version := wire.RequestProtocolVersion(r.Header.Get(headerProtocolVersion), sess.ProtocolVersion)
	if version != wire.BatchProtocolVersion {
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest,
			"JSON-RPC batches exist only in protocol version "+wire.BatchProtocolVersion+", not "+wire.Quote(version))
		return
	}

	calls, ok := s.batchCalls(w, r, sess, msgs)
	if !ok {
		return
	}

	var sw *sseWriter
	if !jsonOK && sseOK {
		sw = newSSEWriter(w)
		sw.start(nil)
		s.opts.Metrics.StreamOpened(metrics.StreamPOST)
		defer s.opts.Metrics.StreamClosed(metrics.StreamPOST)
		// One stream for the batch, kept alive like a single call's.
		defer batchKeepAlive(sw, s.opts.KeepAlive)()
	}
	// The calls' backend bytes are charged to the response budget until
	// their answers are written: each call's alone on a stream, all of
	// them together for the JSON array, written at once.
	var batchHeld *upstream.Held
	batchCtx := r.Context()
	if sw == nil {
		batchCtx, batchHeld = s.opts.ResponseBudget.Hold(r.Context())
	}
	defer batchHeld.Release()
	responses := make([][]byte, len(calls))
	run := func(i int) {
		if data := s.runBatchCall(batchCtx, r, sess, calls[i], sw); data != nil {
			responses[i] = data
		}
	}
	// A pool of workers taking the calls in order: the answers keep the
	// batch's order whatever order the calls end in.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(batchParallel, len(calls)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(calls); i = int(next.Add(1) - 1) {
				run(i)
			}
		})
	}
	wg.Wait()
	if sw != nil {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := append([]byte{'['}, bytes.Join(responses, []byte{','})...)
	_, _ = w.Write(append(out, ']'))
}

// batchCalls delivers a batch's responses and notifications, and returns
// its calls; ok is false when it has answered the request (no calls, or
// the store failed).
func (s *server) batchCalls(w http.ResponseWriter, r *http.Request, sess *store.Session, msgs []batchMessage) (calls []batchMessage, ok bool) {
	var undelivered []string
	for _, bm := range msgs {
		switch m := bm.msg.(type) {
		case *jsonrpc.Response:
			if err := s.opts.Sessions.Deliver(r.Context(), sess, m); err != nil {
				if !errors.Is(err, session.ErrNoPendingRequest) {
					s.log.Error("delivering client response failed", "error", err)
					writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
					return nil, false
				}
				undelivered = append(undelivered, idText(m.ID))
			}
		case *jsonrpc.Request:
			if m.IsCall() {
				calls = append(calls, bm)
				continue
			}
			if err := s.opts.Sessions.Notify(r.Context(), sess, m); err != nil {
				s.log.Warn("handling notification failed", "method", m.Method, "error", err)
			}
		}
	}
	if len(calls) == 0 {
		if len(undelivered) > 0 {
			writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "no server request with id "+wire.Quote(undelivered[0])+" is pending")
			return nil, false
		}
		w.WriteHeader(http.StatusAccepted)
		return nil, false
	}
	return calls, true
}

// runBatchCall runs one call of a batch and returns its encoded answer,
// or nil when it was written on the batch's stream sw. batchCtx holds the
// batch's response budget when the answers are one JSON array.
func (s *server) runBatchCall(batchCtx context.Context, r *http.Request, sess *store.Session, bm batchMessage, sw *sseWriter) []byte {
	ctx := batchCtx
	if sw != nil {
		var held *upstream.Held
		ctx, held = s.opts.ResponseBudget.Hold(r.Context())
		defer held.Release()
	}
	req := bm.msg.(*jsonrpc.Request)
	call := &router.Call{Caller: &router.SessionCaller{Session: sess, Runtime: s.opts.Sessions}, Claims: auth.ClaimsFromContext(r.Context()), Header: r.Header, Request: req}
	var ps *postStream
	if sw != nil {
		// Counted once for the whole batch, not per call.
		ps = &postStream{sw: sw, uncounted: true}
		defer ps.end()
		call.Stream = ps
	}
	ctx, done := s.opts.Sessions.Track(ctx, sess, req.ID)
	var an *requestNote // the call's own audit line (the batch's request has none)
	if a := s.opts.Audit; a != nil && a.Writer != nil && audited(req.Method) {
		principal, _ := auth.FromContext(r.Context())
		an = &requestNote{method: req.Method, params: req.Params, session: string(sess.ID), principal: string(principal), client: sess.ClientInfo,
			audit: &router.AuditNote{}}
		call.Audit = an.audit
	}
	start := time.Now()
	resp := s.opts.Router.Handle(ctx, call)
	done()
	if an != nil {
		an.setResponse(resp)
		s.opts.Audit.record(r, an, r.PathValue("vhost"), http.StatusOK, start, s.opts.Router.RouteOf)
	}
	data := encodeAnswer(resp, bm.rawID)
	if ps != nil {
		ps.finish(data) // after the call's other events, on the shared stream
		return nil
	}
	return data
}
