package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/openapi"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// An OpenAPI backend (Config.OpenAPI) is a REST API the gateway calls
// itself: a Conn whose transport answers the MCP methods from the API
// compiled at start-up (router/openapi) and makes one HTTP request per
// tools/call. It presents itself as a stateless 2026-07-28 server, so the
// router discovers it like any modern backend and sends it one exchange
// per request, and everything the router does around a backend (names,
// access, hooks, rate limits, tasks, both client generations) applies
// unchanged. To a session-protocol handshake it answers initialize too.
//
// Credentials are the backend's as for any backend (requestHeaders:
// add_headers, claim templates, token grants, user_oauth), obtained when
// a call is made rather than when the Conn opens: listing an API's tools
// needs none, so a user who has not signed in still sees them, and is
// asked to sign in by the call. Redirects are followed within the
// request's origin only (credentials never leave it); a response past
// max_response_bytes is refused as it is read.

// maxRedirects bounds the same-origin redirects of one call.
const maxRedirects = 5

// openAPIListTTLMs is the lifetime a tools/list page and a discovery of an
// OpenAPI backend announce: its tools change only with the config.
const openAPIListTTLMs = 10 * 60 * 1000

// rest is the transport of an OpenAPI backend's Conn.
type rest struct {
	conn       *Conn
	api        *openapi.API
	downstream http.Header // the client's request headers, for passthrough_headers
}

// sameOriginRedirects is the CheckRedirect of an OpenAPI backend.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects || !openapi.SameOrigin(req.URL, via[0].URL) {
		return http.ErrUseLastResponse
	}
	return nil
}

// openREST opens a Conn on an OpenAPI backend: nothing is sent.
func (c *Client) openREST(ctx context.Context, h Handshake, downstream http.Header) (*Conn, error) {
	conn := newConn(c, nil)
	conn.span = trace.SpanContextFromContext(ctx)
	conn.t = &rest{conn: conn, api: c.cfg.OpenAPI, downstream: downstream.Clone()}
	if h.ProtocolVersion == "" {
		h.ProtocolVersion = wire.LatestProtocolVersion
	}
	switch {
	case h.SkipInitialize && h.ProtocolVersion == wire.ModernProtocolVersion:
		conn.protocolVersion = h.ProtocolVersion
		conn.meta = modernMeta(h)
	case h.SkipInitialize || h.SessionID != "":
		conn.protocolVersion = h.ProtocolVersion
	default:
		if err := conn.handshake(ctx, h); err != nil {
			_ = conn.Close(false)
			return nil, err
		}
	}
	return conn, nil
}

func (r *rest) roundTrip(ctx context.Context, req *jsonrpc.Request, _ func(context.Context, jsonrpc.Message), _ CallOptions) (*jsonrpc.Response, error) {
	if serve, ok := restMethods[req.Method]; ok {
		return serve(r, ctx, req)
	}
	return rpcErrorResponse(req, wire.CodeMethodNotFound, fmt.Sprintf("backend %q is a REST API described by OpenAPI: it serves tools only, not %s", r.conn.c.cfg.Key, req.Method)), nil
}

// restMethods are the methods an OpenAPI backend answers, one row each;
// any other is unknown to it (-32601).
var restMethods = map[string]func(r *rest, ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error){
	"server/discover": func(r *rest, _ context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
		return r.discover(req)
	},
	"initialize": func(r *rest, _ context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
		return r.initialize(req)
	},
	"ping": func(r *rest, _ context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
		return r.result(req, map[string]any{})
	},
	"tools/list": func(r *rest, _ context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
		return r.list(req)
	},
	"tools/call": (*rest).call,
	"subscriptions/listen": func(r *rest, _ context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
		return nil, r.conn.c.newError(req.Method, 0, ErrNoStream)
	},
}

func (r *rest) discover(req *jsonrpc.Request) (*jsonrpc.Response, error) {
	return r.result(req, map[string]any{"supportedVersions": wire.AllProtocolVersions(), "capabilities": toolsCapability,
		"instructions": r.api.Instructions(), "ttlMs": openAPIListTTLMs, "cacheScope": "public",
		"_meta": map[string]any{metaServerInfo: r.serverInfo()}})
}

func (r *rest) initialize(req *jsonrpc.Request) (*jsonrpc.Response, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(req.Params, &p)
	if !wire.KnowsProtocolVersion(p.ProtocolVersion) {
		p.ProtocolVersion = wire.LatestProtocolVersion
	}
	return r.result(req, map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": toolsCapability,
		"serverInfo": r.serverInfo(), "instructions": r.api.Instructions()})
}

// toolsCapability is what an OpenAPI backend can do.
var toolsCapability = map[string]any{"tools": map[string]any{}}

func (r *rest) serverInfo() map[string]any {
	name := r.api.Title()
	if name == "" {
		name = r.conn.c.cfg.Key
	}
	v := r.api.Version()
	if v == "" {
		v = "0"
	}
	return map[string]any{"name": name, "version": v}
}

// result answers req with m, decorated for a 2026-07-28 connection.
func (r *rest) result(req *jsonrpc.Request, m map[string]any) (*jsonrpc.Response, error) {
	if r.conn.Modern() {
		m["resultType"] = "complete"
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, r.conn.c.newError(req.Method, 0, err)
	}
	return &jsonrpc.Response{ID: req.ID, Result: raw}, nil
}

func rpcErrorResponse(req *jsonrpc.Request, code int64, msg string) *jsonrpc.Response {
	return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: code, Message: msg}}
}

func (r *rest) list(req *jsonrpc.Request) (*jsonrpc.Response, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(req.Params, &p)
	page, err := r.api.ListPage(p.Cursor)
	if err != nil {
		return rpcErrorResponse(req, wire.CodeInvalidParams, "invalid cursor"), nil
	}
	m := map[string]any{"tools": page.Tools, "ttlMs": openAPIListTTLMs, "cacheScope": "public"}
	if page.NextCursor != "" {
		m["nextCursor"] = page.NextCursor
	}
	return r.result(req, m)
}

// call runs tools/call: arguments checked against the tool's
// inputSchema (-32602 when they fail it: no request is made), then the
// HTTP request and its answer as the tool's result.
func (r *rest) call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return rpcErrorResponse(req, wire.CodeInvalidParams, "malformed tools/call params"), nil
	}
	t := r.api.Tool(p.Name)
	if t == nil {
		return rpcErrorResponse(req, wire.CodeInvalidParams, "unknown tool "+wire.Quote(p.Name)), nil
	}
	args, resp := r.arguments(req, t, p.Arguments)
	if resp != nil {
		return resp, nil
	}
	c := r.conn.c
	for attempt := 0; ; attempt++ {
		hresp, err := r.request(ctx, t, args)
		if err != nil {
			if errors.Is(err, openapi.ErrInvalidArguments) {
				return rpcErrorResponse(req, wire.CodeInvalidParams, fmt.Sprintf("invalid arguments for tool %s: %s", wire.Quote(t.Name()), wire.Clip(err.Error()))), nil
			}
			return nil, err
		}
		if hresp.StatusCode == http.StatusUnauthorized && attempt == 0 && c.tokens != nil {
			// A cached token the API no longer takes: the next one is
			// fresh. The request was refused, so it is sent again.
			hresp.Body.Close()
			c.ForgetToken(ctx)
			continue
		}
		result, err := r.answer(ctx, t, hresp)
		if err != nil {
			return nil, err
		}
		if r.conn.Modern() {
			result = withResultType(result)
		}
		return &jsonrpc.Response{ID: req.ID, Result: result}, nil
	}
}

// arguments decodes and checks a call's arguments; a refusal is the
// response to give.
func (r *rest) arguments(req *jsonrpc.Request, t *openapi.Tool, raw json.RawMessage) (map[string]json.RawMessage, *jsonrpc.Response) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	var inst map[string]any
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &inst) != nil || json.Unmarshal(raw, &args) != nil {
		return nil, rpcErrorResponse(req, wire.CodeInvalidParams, fmt.Sprintf("tool %s: arguments must be an object", wire.Quote(t.Name())))
	}
	if err := t.Validate(inst); err != nil {
		return nil, rpcErrorResponse(req, wire.CodeInvalidParams, fmt.Sprintf("invalid arguments for tool %s: %s", wire.Quote(t.Name()), wire.Clip(err.Error())))
	}
	return args, nil
}

// request makes the call's HTTP request with the backend's headers.
func (r *rest) request(ctx context.Context, t *openapi.Tool, args map[string]json.RawMessage) (*http.Response, error) {
	c := r.conn.c
	hdr, err := c.requestHeaders(ctx, r.downstream)
	if err != nil {
		return nil, err
	}
	hreq, err := r.api.Request(ctx, t, args, hdr)
	if err != nil {
		if errors.Is(err, openapi.ErrInvalidArguments) {
			return nil, err
		}
		return nil, c.newError("tools/call", 0, err)
	}
	injectTraceHeaders(ctx, r.conn.spanContext(ctx), hreq.Header)
	hresp, err := c.hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.contextError("tools/call", ctx)
		}
		return nil, c.requestError("tools/call", err)
	}
	return hresp, nil
}

// answer reads the response, bounded, into the tool's result.
func (r *rest) answer(ctx context.Context, t *openapi.Tool, hresp *http.Response) (json.RawMessage, error) {
	defer hresp.Body.Close()
	if hresp.StatusCode >= 300 && hresp.StatusCode < 400 && hresp.Header.Get("Location") != "" {
		return t.RedirectResult(hresp.StatusCode), nil
	}
	metered, _ := meter(ctx, hresp.Body)
	body, err := r.api.ReadBody(hresp, metered)
	var tooLarge *openapi.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return t.TooLargeResult(hresp.StatusCode, tooLarge), nil
	case err != nil && ctx.Err() != nil:
		return nil, r.conn.c.contextError("tools/call", ctx)
	case err != nil:
		return nil, r.conn.c.requestError("tools/call", err)
	}
	return t.Result(hresp, body), nil
}

// withResultType adds resultType to a result object the gateway built.
func withResultType(result json.RawMessage) json.RawMessage {
	if len(result) < 2 || result[0] != '{' {
		return result
	}
	out := make([]byte, 0, len(result)+len(`"resultType":"complete",`))
	out = append(out, `{"resultType":"complete"`...)
	if rest := result[1:]; len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, result[1:]...)
}

// send has nothing to deliver: notifications (initialized, cancelled)
// concern no request the API knows of.
func (r *rest) send(context.Context, jsonrpc.Message) error { return nil }

func (r *rest) listen(context.Context, func(context.Context, jsonrpc.Message), func()) error {
	return r.conn.c.newError("listen", 0, ErrNoStream)
}

func (r *rest) close(bool) error { return nil }
