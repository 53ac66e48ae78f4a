package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/store"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Header names of the Streamable HTTP transport.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// servePOST handles one JSON-RPC message posted by the client.
func (s *server) servePOST(w http.ResponseWriter, r *http.Request) {
	body, jsonOK, sseOK, ok := s.readPOST(w, r)
	if !ok {
		return
	}
	if isBatch(body) {
		s.serveBatch(w, r, body, jsonOK, sseOK)
		return
	}
	msg, rawID, herr := decodeMessage(body)
	if herr != nil {
		writeHTTPError(w, http.StatusBadRequest, herr.code, herr.msg)
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		metrics.SetRPCMethod(r.Context(), req.Method)
		noteOf(w).setRequest(req.Method, req.Params)
	} else {
		metrics.SetRPCMethod(r.Context(), "response")
		noteOf(w).setRequest("response", nil)
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		if meta, metaOK := paramsMeta(req.Params); isModern(meta, metaOK, r.Header.Values(headerProtocolVersion)) {
			s.serveModern(w, r, req, rawID, meta, metaOK, jsonOK, sseOK)
			return
		}
	}
	if s.refuseVersion(w, r, msg, rawID) {
		return
	}
	principal, _ := auth.FromContext(r.Context())
	noteOf(w).setCaller(string(principal), nil)
	if req, ok := msg.(*jsonrpc.Request); ok && wire.MethodOf(req.Method).Handshake {
		s.serveInitialize(w, r, req, rawID, principal, jsonOK)
		return
	}

	early := s.admitEarly(r, msg, principal)
	sess, ok := s.loadSession(w, r, principal)
	if ok {
		noteOf(w).setCaller(string(principal), sess.ClientInfo)
	}
	call, decided, refusal := early.wait(w)
	if !ok {
		return
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		s.deliver(w, r, sess, m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			if err := s.opts.Sessions.Notify(r.Context(), sess, m); err != nil {
				s.log.Warn("handling notification failed", "method", m.Method, "error", err)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if refusal != nil {
			s.writeResponse(w, refusal, rawID, jsonOK)
			return
		}
		if call == nil {
			call = &router.Call{VHost: sess.VHost, Principal: sess.Principal, Claims: auth.ClaimsFromContext(r.Context()), Header: r.Header, Request: m}
		}
		call.Caller = &router.SessionCaller{Session: sess, Runtime: s.opts.Sessions}
		call.Audit = noteOf(w).auditNote()
		s.serveCall(w, r, call, decided, rawID, jsonOK, sseOK)
	}
}

// refuseVersion answers a 2025 request whose MCP-Protocol-Version header
// is repeated or names a version the gateway does not serve: true when it
// has.
func (s *server) refuseVersion(w http.ResponseWriter, r *http.Request, msg jsonrpc.Message, rawID json.RawMessage) bool {
	if refuseRepeatedVersion(w, r.Header) {
		return true
	}
	pv := r.Header.Get(headerProtocolVersion)
	if pv == "" || wire.ServesProtocolVersion(pv) {
		return false
	}
	herr := unsupportedVersion(pv)
	method := "response"
	if req, ok := msg.(*jsonrpc.Request); ok {
		method = req.Method
	}
	s.logRefusedVersion(r, method, herr.err)
	writeRPCError(w, herr.status, rawID, herr.err, 0)
	return true
}

// earlyAdmission is a tools/call's Admit, run while its session loads.
//
// A call's rate limits need the vhost, the caller and the tool, not the
// session: they are counted while the session loads, so a rate-limited
// vhost costs no second store round trip in sequence (the session check
// still decides whether the call runs; a call refused for its session has
// been counted, like any other call of that caller).
type earlyAdmission struct {
	call    *router.Call
	done    chan struct{}
	decided *router.Decisions
	refusal *jsonrpc.Response
}

// admitEarly starts msg's Admit when it is a tools/call on a vhost with
// rate limits; nil otherwise.
func (s *server) admitEarly(r *http.Request, msg jsonrpc.Message, principal auth.Principal) *earlyAdmission {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() || !wire.MethodOf(req.Method).RateLimited || !s.opts.Router.RateLimits(r.PathValue("vhost")) {
		return nil
	}
	e := &earlyAdmission{done: make(chan struct{}), call: &router.Call{VHost: r.PathValue("vhost"), Principal: string(principal),
		Claims: auth.ClaimsFromContext(r.Context()), Header: r.Header, Request: req}}
	go func() {
		defer close(e.done)
		e.decided, e.refusal = s.opts.Router.Admit(r.Context(), e.call)
	}()
	return e
}

// wait waits for the Admit (none for a nil e) and notes what it resolved.
func (e *earlyAdmission) wait(w http.ResponseWriter) (*router.Call, *router.Decisions, *jsonrpc.Response) {
	if e == nil {
		return nil, nil, nil
	}
	<-e.done
	noteResolved(w, e.call)
	return e.call, e.decided, e.refusal
}

// readPOST checks a POST's Content-Type and Accept and reads its body:
// ok is false when it has answered the request with a refusal. The whole
// body is read whatever Content-Length says: Lambda Function URL requests
// can carry a decoded base64 body with ContentLength 0.
func (s *server) readPOST(w http.ResponseWriter, r *http.Request) (body []byte, jsonOK, sseOK, ok bool) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeHTTPError(w, http.StatusUnsupportedMediaType, codeInvalidRequest, "Content-Type must be application/json")
		return nil, false, false, false
	}
	jsonOK, sseOK = accepts(r.Header.Values("Accept"))
	if !jsonOK && !sseOK {
		writeHTTPError(w, http.StatusNotAcceptable, codeInvalidRequest, "Accept must include application/json or text/event-stream")
		return nil, false, false, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeHTTPError(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, "request body exceeds the size limit")
		case bodyReadTimedOut(err):
			w.Header().Set("Connection", "close")
			writeHTTPError(w, http.StatusRequestTimeout, codeInvalidRequest,
				"request body not received within the read timeout ("+s.opts.ReadTimeout.String()+")")
		default:
			writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "cannot read request body")
		}
		return nil, false, false, false
	}
	return body, jsonOK, sseOK, true
}

// serveInitialize opens a 2025 session.
func (s *server) serveInitialize(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, rawID json.RawMessage, principal auth.Principal, jsonOK bool) {
	if !req.IsCall() {
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "initialize must be a request with an id")
		return
	}
	ctx, held := s.opts.ResponseBudget.Hold(r.Context())
	defer held.Release()
	s.logUnservedInitialize(r, req.Params)
	sess, resp := s.opts.Router.Initialize(ctx, r.PathValue("vhost"), string(principal), r.Header, req)
	if sess != nil {
		w.Header().Set(headerSessionID, string(sess.ID))
		noteOf(w).setSession(string(sess.ID))
	}
	s.writeResponse(w, resp, rawID, jsonOK)
}

// deliver hands the client's answer to a sampling, elicitation or roots
// request to the call waiting for it, which may be on another instance.
func (s *server) deliver(w http.ResponseWriter, r *http.Request, sess *store.Session, m *jsonrpc.Response) {
	if err := s.opts.Sessions.Deliver(r.Context(), sess, m); err != nil {
		if errors.Is(err, session.ErrNoPendingRequest) {
			writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "no server request with id "+wire.Quote(idText(m.ID))+" is pending")
			return
		}
		s.log.Error("delivering client response failed", "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// serveCall runs one request. The answer is application/json when the
// client accepts it and nothing streams; it becomes an SSE stream as soon
// as the call sends the client anything else (progress, log messages,
// server-to-client requests), or from the start for a call that asked for
// progress.
//
// An event stream is resumable (see call_resume.go): each event is
// logged before it is sent, and once the client holds an event id the
// call no longer ends with the connection.
//
// rawID is the request's id as the client wrote it: the answer echoes it
// byte for byte.
//
// The backend bytes the call reads are charged to the instance's response
// budget until its answer has been written (Options.ResponseBudget).
func (s *server) serveCall(w http.ResponseWriter, r *http.Request, call *router.Call, decided *router.Decisions, rawID json.RawMessage, jsonOK, sseOK bool) {
	sess, req := call.Session(), call.Request
	// Rate limits are decided before any stream begins: a refusal is an
	// HTTP status (429), which a stream's 200 could no longer be. (servePOST
	// has decided and counted a tools/call already, while the session
	// loaded: decided.)
	if decided == nil {
		var refusal *jsonrpc.Response
		decided, refusal = s.opts.Router.Admit(r.Context(), call)
		noteResolved(w, call)
		if refusal != nil {
			s.writeResponse(w, refusal, rawID, jsonOK)
			return
		}
	}
	ctx, held := s.opts.ResponseBudget.Hold(r.Context())
	defer held.Release()
	// A list page is built into a pooled buffer, given back once the
	// answer is written (the deferred calls below run before this one).
	page, releasePage := router.LendPageBuffer()
	defer releasePage()
	call.Page = page
	var ps *postStream
	if sseOK {
		ps = &postStream{sw: newSSEWriter(w), m: s.opts.Metrics, errLog: s.log,
			log: s.opts.Sessions.NewCallLog(sess.ID, req.ID), logCtx: context.WithoutCancel(r.Context())}
		defer ps.end()
		defer ps.log.Close() // after finish: the answer is logged first
		call.Stream = ps
		if !jsonOK || hasProgressToken(req.Params) {
			ps.begin()
		}
		defer ps.keepAlive(s.opts.KeepAlive)()
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(r.Context(), func() {
			if !ps.resumable() {
				cancel() // the client cannot come back for it
			}
		})()
		ctx = cctx
	}
	ctx, done := s.opts.Sessions.Track(ctx, sess, req.ID)
	defer done()
	resp := s.opts.Router.Serve(ctx, call, decided)
	noteOf(w).setResponse(resp)
	if ps != nil {
		if ps.streaming() {
			ps.finish(encodeAnswer(resp, rawID))
			return
		}
	}
	s.writeResponse(w, resp, rawID, jsonOK)
}

// hasProgressToken reports whether params._meta carries a progressToken.
// The params were validated with the message, so they are read where
// they lie.
func hasProgressToken(params json.RawMessage) bool {
	meta, ok := wire.MemberValue(params, "_meta")
	if !ok {
		return false
	}
	token, ok := wire.MemberValue(meta, "progressToken")
	return ok && string(token) != "null"
}

// writeResponse answers a call as application/json when the client accepts
// it, else as a one-event SSE stream; the id is rawID, as the client wrote
// it. A call the session store failed gets HTTP 503.
//
// A result (a list page: hundreds of kilobytes) is written as it is,
// between the message's head and its end, rather than copied into an
// encoded message and that into an SSE frame: net/http hands a large
// write to the connection without buffering it.
func (s *server) writeResponse(w http.ResponseWriter, resp *jsonrpc.Response, rawID json.RawMessage, jsonOK bool) {
	noteOf(w).setResponse(resp)
	if writeRefusal(w, resp, rawID) { // 429, 400, or 503 when the session store failed
		return
	}
	var frame []byte
	if !jsonOK {
		frame = append(make([]byte, 0, 64), "event: message\ndata: "...)
	}
	head, whole := wire.AppendResponseHead(frame, resp, rawID)
	body, tail := resp.Result, "}"
	if !whole {
		data, err := wire.EncodeResponseAs(resp, rawID)
		if err != nil {
			writeHTTPError(w, http.StatusInternalServerError, codeInternalError, "cannot encode response")
			return
		}
		body, tail = data, ""
	}
	if jsonOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		writeParts(w, head, body, tail)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	writeParts(w, head, body, tail+"\n\n")
	_ = http.NewResponseController(w).Flush()
}

// writeParts writes head, body and tail, one message, to w: a small
// message in one write (one chunk, or a Content-Length), a large body
// without copying it.
func writeParts(w http.ResponseWriter, head, body []byte, tail string) {
	if len(body) <= smallBody {
		_, _ = w.Write(append(append(head, body...), tail...))
		return
	}
	if len(head) > 0 {
		if _, err := w.Write(head); err != nil {
			return
		}
	}
	if _, err := w.Write(body); err != nil {
		return
	}
	_, _ = io.WriteString(w, tail)
}

// smallBody: a body up to this size is copied into one write with its
// head and tail (a copy of a few kilobytes costs less than two more
// writes through net/http's buffers).
const smallBody = 8 << 10

// idText is an id's value as text, for messages (Quote it).
func idText(id jsonrpc.ID) string {
	if n, ok := id.Raw().(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	s, _ := id.Raw().(string)
	return s
}

type decodeError struct {
	code int64
	msg  string
}

// decodeMessage parses one JSON-RPC message, telling malformed JSON
// (-32700) from well-formed JSON that is not a valid message (-32600), and
// returns its id as the client wrote it. An id that is not a string or an
// integer (null, 1.5, 1e3, 2^63) is -32600: see internal/wire/request_id.go.
func decodeMessage(body []byte) (jsonrpc.Message, json.RawMessage, *decodeError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, nil, &decodeError{codeParseError, "empty request body"}
	}
	msg, rawID, err := wire.DecodeWithID(trimmed)
	if err != nil {
		switch {
		case errors.Is(err, wire.ErrParse):
			return nil, nil, &decodeError{codeParseError, "request body is not valid JSON"}
		case trimmed[0] != '{':
			return nil, nil, &decodeError{codeInvalidRequest, "request body must be a JSON-RPC object"}
		case errors.Is(err, wire.ErrInvalidID):
			return nil, nil, &decodeError{codeInvalidRequest, "invalid JSON-RPC message: " + err.Error()}
		}
		return nil, nil, &decodeError{codeInvalidRequest, "invalid JSON-RPC message"}
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "" {
			return nil, nil, &decodeError{codeInvalidRequest, "JSON-RPC request needs a method"}
		}
	case *jsonrpc.Response:
		if m.Result == nil && m.Error == nil {
			return nil, nil, &decodeError{codeInvalidRequest, "invalid JSON-RPC message: a response needs a result or an error"}
		}
	}
	return msg, rawID, nil
}
