package handler

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// serveModern serves one POSTed request of protocol 2026-07-28: no
// session to load, nothing stored, so it costs the store nothing. The
// answer is JSON, or an event stream when the request streams (progress,
// log messages, a listen) and the client accepts one. Closing the stream
// cancels the request: the revision has no resumption, and no
// notifications/cancelled over HTTP. meta and metaOK are paramsMeta's
// answer for req.
func (s *server) serveModern(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, rawID json.RawMessage, meta requestMeta, metaOK bool, jsonOK, sseOK bool) {
	principal, _ := auth.FromContext(r.Context())
	noteOf(w).setCaller(string(principal), meta.ClientInfo)
	if !req.IsCall() {
		// The revision sends none but notifications/cancelled, which HTTP
		// replaces by closing the request's stream: nothing to do.
		if got := r.Header.Get(headerMethod); repeatedModernHeader(r.Header) != "" || got != "" && got != req.Method {
			w.WriteHeader(http.StatusBadRequest) // a notification gets a status only
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if herr := checkModern(req, r.Header, meta, metaOK); herr != nil {
		s.logRefusedVersion(r, req.Method, herr.err)
		writeRPCError(w, herr.status, rawID, herr.err, 0)
		return
	}
	client := &router.ModernClient{ClientCapabilities: meta.ClientCapabilities, ClientInfo: meta.ClientInfo, Parks: s.opts.Parks}
	if meta.LogLevel != nil {
		client.LogLevel = *meta.LogLevel
	}
	call := &router.Call{VHost: r.PathValue("vhost"), Principal: string(principal), Claims: auth.ClaimsFromContext(r.Context()), Header: r.Header,
		Request: req, Caller: client, Audit: noteOf(w).auditNote()}
	listen := wire.MethodOf(req.Method).OpenEnded
	if listen && !sseOK {
		writeRPCError(w, http.StatusNotAcceptable, rawID, &jsonrpc.Error{Code: codeInvalidRequest,
			Message: "subscriptions/listen answers on an event stream: Accept must include text/event-stream"}, 0)
		return
	}
	// Rate limits are decided before any stream begins (429, not a 200
	// stream carrying the error).
	decided, refusal := s.opts.Router.Admit(r.Context(), call)
	noteResolved(w, call)
	if refusal != nil {
		s.writeResponse(w, refusal, rawID, jsonOK)
		return
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
		ps = &postStream{sw: newSSEWriter(w), m: s.opts.Metrics, errLog: s.log}
		defer ps.end()
		call.Stream = ps
		// A listen's stream begins once the router has admitted it
		// (postStream.Begin): over a bound it is refused with a status.
		if !listen && (!jsonOK || meta.hasProgressToken()) {
			ps.begin()
		}
		defer ps.keepAlive(s.opts.KeepAlive)()
	}
	resp := s.opts.Router.Serve(ctx, call, decided)
	noteOf(w).setResponse(resp)
	if ps != nil && ps.streaming() {
		ps.finish(encodeAnswer(resp, rawID))
		return
	}
	s.writeResponse(w, resp, rawID, jsonOK) // a refusal's status is its Failure's (router.Refusal)
}

// logRefusedVersion says why a request was refused before it reached the
// router (an unsupported protocol version, headers that disagree with the
// body, _meta missing what the revision requires): a client that fails
// protocol negotiation usually gives up after its first request, and
// without this line the operator sees only a 400.
func (s *server) logRefusedVersion(r *http.Request, method string, e *jsonrpc.Error) {
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "protocol negotiation failed",
		slog.String("vhost", wire.Clip(r.PathValue("vhost"))),
		slog.String("rpc_method", wire.Clip(method)),
		slog.String("protocol_version", wire.Clip(r.Header.Get(headerProtocolVersion))),
		slog.Int64("rpc_code", e.Code),
		slog.String("reason", e.Message),
		slog.String("supported", strings.Join(wire.AllProtocolVersions(), ", ")))
}

// logUnservedInitialize notes an initialize that asks for a protocol
// version the gateway does not speak: the answer offers
// wire.LatestProtocolVersion instead, and a client that cannot speak that
// disconnects without saying why, so the log says it.
func (s *server) logUnservedInitialize(r *http.Request, params json.RawMessage) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &p) != nil || wire.ServesProtocolVersion(p.ProtocolVersion) {
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "protocol negotiation: initialize asks for a version this gateway does not speak; offering its latest",
		slog.String("vhost", wire.Clip(r.PathValue("vhost"))),
		slog.String("requested", wire.Clip(p.ProtocolVersion)),
		slog.String("offered", wire.LatestProtocolVersion),
		slog.String("supported", strings.Join(wire.AllProtocolVersions(), ", ")))
}
