package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/handler/metrics"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC batches belong to protocol 2025-03-26 only: 2025-06-18 removed
// them. A client of that version may POST an array of requests,
// notifications and responses; the gateway handles the notifications and
// responses first, in order, then runs the requests concurrently.
//
// The answer is a JSON array of the requests' responses, in the batch's
// order, when the client accepts application/json; calls in such a batch
// cannot stream (no progress, no server-to-client requests), as there is
// no stream to carry them. A client that accepts only text/event-stream
// gets one SSE stream that every call of the batch shares: progress and
// server requests as they happen, each response as its call ends.

// batchVersion is the one protocol version that has batches.
const batchVersion = "2025-03-26"

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

// decodeBatch parses a batch into its messages.
func decodeBatch(body []byte) ([]batchMessage, *decodeError) {
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return nil, &decodeError{codeParseError, "request body is not valid JSON"}
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
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" {
			return nil, &decodeError{codeInvalidRequest, "initialize must not be part of a JSON-RPC batch"}
		}
		msgs[i] = batchMessage{m, rawID}
	}
	return msgs, nil
}

// serveBatch handles a POSTed batch; the body has been read and checked
// for size, content type and Accept.
func (s *server) serveBatch(w http.ResponseWriter, r *http.Request, body []byte, jsonOK, sseOK bool) {
	msgs, derr := decodeBatch(body)
	if derr != nil {
		writeHTTPError(w, http.StatusBadRequest, derr.code, derr.msg)
		return
	}
	metrics.SetRPCMethod(r.Context(), "batch")
	principal, _ := auth.FromContext(r.Context())
	sess, ok := s.loadSession(w, r, principal)
	if !ok {
		return
	}
	version := sess.ProtocolVersion
	if pv := r.Header.Get(headerProtocolVersion); pv != "" {
		version = pv
	}
	if version != batchVersion {
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest,
			"JSON-RPC batches exist only in protocol version "+batchVersion+", not "+wire.Quote(version))
		return
	}

	var calls []batchMessage
	var undelivered []string
	for _, bm := range msgs {
		switch m := bm.msg.(type) {
		case *jsonrpc.Response:
			if err := s.opts.Router.Deliver(r.Context(), sess, m); err != nil {
				if !errors.Is(err, router.ErrNoPendingRequest) {
					s.log.Error("delivering client response failed", "error", err)
					writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, "session store unavailable")
					return
				}
				undelivered = append(undelivered, idText(m.ID))
			}
		case *jsonrpc.Request:
			if m.IsCall() {
				calls = append(calls, bm)
				continue
			}
			if err := s.opts.Router.Notify(r.Context(), &router.Call{Session: sess, Header: r.Header, Request: m}); err != nil {
				s.log.Warn("handling notification failed", "method", m.Method, "error", err)
			}
		}
	}
	if len(calls) == 0 {
		if len(undelivered) > 0 {
			writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "no server request with id "+wire.Quote(undelivered[0])+" is pending")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}

	var sw *sseWriter
	if !jsonOK && sseOK {
		sw = newSSEWriter(w)
		sw.start(nil)
		s.opts.Metrics.StreamOpened(metrics.StreamPOST)
		defer s.opts.Metrics.StreamClosed(metrics.StreamPOST)
		// One stream for the batch, kept alive like a single call's.
		defer (&postStream{sw: sw, opened: true}).keepAlive(s.opts.KeepAlive)()
	}
	responses := make([][]byte, len(calls))
	var wg sync.WaitGroup
	for i, bm := range calls {
		req := bm.msg.(*jsonrpc.Request)
		wg.Go(func() {
			call := &router.Call{Session: sess, Header: r.Header, Request: req}
			var ps *postStream
			if sw != nil {
				// Counted once above for the whole batch, not per call.
				ps = &postStream{sw: sw, m: s.opts.Metrics, opened: true}
				call.Stream = ps
			}
			resp := s.opts.Router.Handle(r.Context(), call)
			data, err := wire.EncodeResponseAs(resp, bm.rawID)
			if err != nil {
				data, _ = wire.EncodeResponseAs(&jsonrpc.Response{Error: &jsonrpc.Error{Code: codeInternalError, Message: "cannot encode response"}}, bm.rawID)
			}
			if ps != nil {
				ps.close()
				_ = sw.event("", 0, data)
				return
			}
			responses[i] = data
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
