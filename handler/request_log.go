package handler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// logRequests logs one line per request on the MCP endpoint: at debug
// level, and at info when it failed (HTTP status 400 or more, or a
// JSON-RPC error), so an operator at the default level sees every failure
// and nothing else. The line names the vhost, the HTTP and JSON-RPC
// methods, the published name a routed request targets and the backend it
// goes to, the HTTP status, the JSON-RPC error code and the duration.
//
// It never logs headers, bodies, tokens or a session id: a session is
// named by a short hash of its id (session_hash), enough to follow one
// session through the log but useless to take it over.
//
// What the line says beyond HTTP is noted by the handler as it learns it
// (noteOf): the note lives in the response writer, so it costs no context
// allocation, and the published name and backend are worked out only when
// the line is written. routeOf names the backend of a published name.
func logRequests(log *slog.Logger, aud *Audit, routeOf func(vhost, method, id string) string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &loggedWriter{StatusWriter: metrics.StatusWriter{ResponseWriter: w}}
			noteAudit(aud, &rec.note)
			next.ServeHTTP(rec, r)
			vhost, ok := mcpPathVHost(r.URL.Path)
			if !ok {
				return // the probes, /metrics, the well-known documents
			}
			status := rec.Status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			n := &rec.note
			if n.audit != nil && r.Method == http.MethodPost && audits(status, n) {
				aud.record(r, n, vhost, status, start, routeOf)
			}
			level := slog.LevelDebug
			if status >= 400 || n.hasCode {
				level = slog.LevelInfo
			}
			ctx := r.Context()
			if !log.Enabled(ctx, level) {
				return
			}
			attrs := make([]slog.Attr, 0, 10)
			attrs = append(attrs, slog.String("vhost", wire.Clip(vhost)), slog.String("http_method", r.Method))
			if n.method != "" {
				attrs = append(attrs, slog.String("rpc_method", wire.Clip(n.method)))
			}
			if name := publishedName(n.method, n.params); name != "" {
				attrs = append(attrs, slog.String("name", name))
				if b := routeOf(vhost, n.method, name); b != "" {
					attrs = append(attrs, slog.String("backend", b))
				}
			}
			attrs = append(attrs, slog.Int("status", status))
			if n.hasCode {
				attrs = append(attrs, slog.Int64("rpc_code", n.code))
			}
			if n.session != "" {
				attrs = append(attrs, slog.String("session_hash", sessionHash(n.session)))
			}
			if n.detail != "" {
				attrs = append(attrs, slog.String("detail", n.detail))
			}
			if f := n.authFailure; f.Class != "" {
				attrs = append(attrs, slog.String("auth_reason", f.Class), slog.String("auth_detail", f.Detail))
			}
			attrs = append(attrs, slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000))
			log.LogAttrs(ctx, level, "request", attrs...)
		})
	}
}

// loggedWriter records the status and carries the request's note.
type loggedWriter struct {
	metrics.StatusWriter
	note requestNote
}

// requestNote is what the handler learned about a request, for its log line.
type requestNote struct {
	method  string          // the JSON-RPC method ("batch", "response")
	params  json.RawMessage // its params: the published name is read from them
	session string          // the session id; logged only as a hash
	code    int64           // the JSON-RPC error code of the answer
	hasCode bool

	// For the audit trail (audit_trail.go), noted whether it is on or not
	// (each costs a field write).
	principal string
	client    json.RawMessage // the clientInfo the client gave
	errData   json.RawMessage // the error's data (which limit refused)
	errMsg    string          // the error's message (a refusal's reason when its data names none)
	toolError bool
	audit     *router.AuditNote // nil: the trail is off

	// authFailure is why the auth middleware refused the request (a
	// 401): its class goes in the log line and the audit record, its
	// detail in the log line only.
	authFailure auth.Failure
	// detail says more about a refusal for the operator (what the config
	// holds); "" for none.
	detail string

	// challenge is the auth-params naming the vhost's metadata, for a
	// 403 insufficient_scope challenge (refusal.go); "" when none is
	// published.
	challenge string
}

// noteOf finds the note of the request w answers, through the writers
// middleware wrapped around it; nil when the request log is not in the
// chain (tests that build parts of the handler), which every method of
// *requestNote accepts.
func noteOf(w http.ResponseWriter) *requestNote {
	for {
		if lw, ok := w.(*loggedWriter); ok {
			return &lw.note
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

// noteResolved notes the request as the router decided it: a tool
// search vhost's call_tool is the tools/call of the tool it names, and
// the log line and the audit name that tool and its arguments.
func noteResolved(w http.ResponseWriter, call *router.Call) {
	if call != nil && call.Request != nil {
		noteOf(w).setRequest(call.Request.Method, call.Request.Params)
	}
}

func (n *requestNote) setRequest(method string, params json.RawMessage) {
	if n != nil {
		n.method, n.params = method, params
	}
}

// noteAuthFailure notes why the auth middleware refused a request.
func noteAuthFailure(w http.ResponseWriter, _ *http.Request, f auth.Failure) {
	if n := noteOf(w); n != nil {
		n.authFailure = f
	}
}

func (n *requestNote) setDetail(d string) {
	if n != nil {
		n.detail = d
	}
}

func (n *requestNote) setSession(id string) {
	if n != nil && id != "" {
		n.session = id
	}
}

// setError notes the JSON-RPC error code of the answer.
func (n *requestNote) setError(code int64) {
	if n != nil {
		n.code, n.hasCode = code, true
	}
}

// setResponse notes the error code of resp, if it is an error.
func (n *requestNote) setResponse(resp *jsonrpc.Response) {
	if n == nil || resp == nil {
		return
	}
	if resp.Error == nil {
		if n.audit != nil && wire.MethodOf(n.method).Tool {
			n.toolError = isToolError(resp.Result)
		}
		return
	}
	code := int64(wire.CodeInternalError)
	var e *jsonrpc.Error
	if errors.As(resp.Error, &e) {
		code = e.Code
		n.errData, n.errMsg = e.Data, e.Message
	}
	n.setError(code)
}

// setErrorWithData notes a JSON-RPC error and its data.
func (n *requestNote) setErrorWithData(code int64, data json.RawMessage) {
	if n != nil {
		n.setError(code)
		n.errData = data
	}
}

// setCaller notes the principal and the clientInfo of the request.
func (n *requestNote) setCaller(principal string, clientInfo json.RawMessage) {
	if n != nil {
		n.principal = principal
		if len(clientInfo) > 0 {
			n.client = clientInfo
		}
	}
}

// isToolError reports whether a tools/call result says isError.
func isToolError(result json.RawMessage) bool {
	if !bytes.Contains(result, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

// mcpPathVHost is the vhost of a /servers/{vhost}/mcp path.
func mcpPathVHost(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/servers/")
	if !ok {
		return "", false
	}
	vhost, ok := strings.CutSuffix(rest, "/mcp")
	if !ok {
		return "", false
	}
	return vhost, true
}

// publishedName is the identifier a routed request names: the tool or
// prompt name, the resource URI, or the completion's reference.
func publishedName(method string, params json.RawMessage) string {
	if len(params) == 0 {
		return ""
	}
	if wire.MethodOf(method).Routed == "" {
		return ""
	}
	var p struct {
		Name string `json:"name"`
		URI  string `json:"uri"`
		Ref  struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	for _, s := range []string{p.Name, p.URI, p.Ref.Name, p.Ref.URI} {
		if s != "" {
			return wire.Clip(s)
		}
	}
	return ""
}

// sessionHash names a session in logs: the first 8 hex digits of the
// SHA-256 of its id. It tells sessions apart in one log; it cannot be used
// as the id.
func sessionHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:4])
}
