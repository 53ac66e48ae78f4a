// Package upstream is the gateway's client for backend MCP servers.
//
// It is a thin raw JSON-RPC client rather than the go-sdk's ClientSession
// because the gateway must pass results through byte for byte, restore a
// stored backend session id on any instance, send MCP-Protocol-Version from
// a stored snapshot without a discovery probe, and see every message on a
// call's stream (progress, server-to-client requests). Connections are
// opened per downstream request; the HTTP keep-alive pool underneath is
// shared per backend.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/openapi"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Transport names how the gateway talks to a backend: the `transport` of
// a backend in config. These are the only names; config accepts exactly
// these.
type Transport string

const (
	// TransportStreamableHTTP is the MCP Streamable HTTP transport
	// (2025-03-26 on), the default.
	TransportStreamableHTTP Transport = "streamable-http"
	// TransportSSE is the legacy HTTP+SSE transport (2024-11-05).
	TransportSSE Transport = "sse"
	// TransportStdio runs the backend as a local process speaking MCP on
	// its stdin and stdout (Config.Stdio; see stdio.go).
	TransportStdio Transport = "stdio"
	// TransportOpenAPI is a REST API the gateway calls itself, its tools
	// made from an OpenAPI description (Config.OpenAPI; see openapi.go).
	// Config sets it for a backend with an `openapi` block.
	TransportOpenAPI Transport = "openapi"
)

const (
	// cleanupTimeout bounds the best-effort messages sent when a call or a
	// connection ends (notifications/cancelled, DELETE), which must not hold
	// up the downstream response for long.
	cleanupTimeout = 2 * time.Second
	// maxErrorBody bounds how much of a non-2xx body is read to look for a
	// JSON-RPC error answer.
	maxErrorBody = 64 << 10
)

// Config is the wire-level part of one configured backend: where it is,
// how to reach it, how long to wait, and the header policy. router.Backend
// embeds it and adds the routing rules, so config validation builds both
// in one value and nothing is copied field by field.
type Config struct {
	// Key is the backend key: it names the backend in every error, and is
	// its public prefix on a multi-backend vhost.
	Key       string
	URL       string
	Transport Transport // TransportStreamableHTTP (also when empty) or TransportSSE
	// Timeout bounds Open and each Call, together with the caller's context.
	// Zero means no bound beyond the caller's context.
	Timeout time.Duration
	// PassthroughHeaders are copied from the downstream request (never
	// Authorization).
	PassthroughHeaders []string
	// AddHeaders are set on every backend request; values are already
	// ${ENV}-expanded and may hold secrets: never log them.
	AddHeaders map[string]string
	// HeaderTemplates are add_headers values that name claims of the
	// caller's token (${claims.sub}): expanded for every request from the
	// caller its context carries (credentials.CallerFrom). A name is in
	// AddHeaders or here, never both.
	HeaderTemplates map[string]*credentials.Template
	// Credentials, when set, is how the gateway obtains this backend's
	// bearer token (token exchange or client credentials); the token is
	// sent as Authorization: Bearer on every request. nil: none.
	Credentials *credentials.Settings
	// RemoveHeaders are deleted last, so remove wins over add and
	// passthrough.
	RemoveHeaders []string
	// MaxMessageBytes bounds one message (SSE event or JSON body) from the
	// backend; zero means 16 MiB.
	MaxMessageBytes int
	// Stdio says how to run the backend when Transport is TransportStdio
	// (URL and the header policy then have no use).
	Stdio *StdioConfig
	// OpenAPI is the compiled API of a TransportOpenAPI backend (URL then
	// has no use: each tool knows its base URL).
	OpenAPI *openapi.API
}

// Client talks to one backend. It is safe for concurrent use and holds one
// pooled keep-alive *http.Client with its own http.Transport, so tuning it
// never touches http.DefaultTransport.
type Client struct {
	cfg    Config
	url    *url.URL
	urlErr error
	hc     *http.Client
	ht     *http.Transport
	// tokens obtains and caches the backend's bearer tokens (nil: the
	// backend has no Credentials). It lives as long as the client, so a
	// config reload starts with an empty cache.
	tokens *credentials.Source
	pool   *stdioPool // TransportStdio only
	// sizes: the longest line of the latest answer to each method on an
	// event stream, for reading the next one (eventSizes).
	sizes eventSizes
}

// Option tunes New.
type Option func(*options)

type options struct {
	log        *slog.Logger
	clientInfo json.RawMessage
	users      credentials.UserTokenSource
}

// WithLogger is where a stdio backend's pool logs (its processes' stderr,
// their exits); the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClientInfo is the clientInfo a stdio backend's processes are
// initialized with (a gateway default if unset).
func WithClientInfo(info json.RawMessage) Option {
	return func(o *options) { o.clientInfo = info }
}

// WithUserTokens is where a user_oauth backend's requests get the calling
// user's token (credentials.NewSource's users).
func WithUserTokens(src credentials.UserTokenSource) Option {
	return func(o *options) { o.users = src }
}

// New returns a client for cfg. A bad URL is reported by Open, as an *Error.
// A stdio backend's pool starts its Min processes in the background at
// once; Close stops them.
func New(cfg Config, opts ...Option) *Client {
	var ht *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		ht = dt.Clone() // proxy, dial and TLS defaults, without sharing its pool
	} else {
		ht = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}
	}
	ht.MaxIdleConns = 256
	ht.MaxIdleConnsPerHost = 64
	ht.IdleConnTimeout = 90 * time.Second
	c := &Client{
		cfg: cfg,
		ht:  ht,
		hc: &http.Client{
			Transport: ht,
			// Redirects are not followed: Go would replay the request, with
			// add_headers credentials, to wherever the backend points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	if cfg.MaxMessageBytes <= 0 {
		c.cfg.MaxMessageBytes = defaultMaxMessageBytes
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Credentials != nil {
		c.tokens = credentials.NewSource(*cfg.Credentials, nil, o.users)
	}
	if cfg.Transport == TransportStdio {
		if o.log == nil {
			o.log = slog.Default()
		}
		if cfg.Stdio == nil || cfg.Stdio.Command == "" {
			c.urlErr = errors.New("no command to run")
		} else {
			c.pool = newStdioPool(c, o.log, o.clientInfo)
		}
		return c
	}
	if cfg.Transport == TransportOpenAPI {
		c.hc.CheckRedirect = sameOriginRedirects
		if cfg.OpenAPI == nil {
			c.urlErr = errors.New("no OpenAPI description")
		}
		return c
	}
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil:
		c.urlErr = errors.New("invalid URL")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		c.urlErr = errors.New("URL must be absolute http(s)")
	default:
		c.url = u
	}
	return c
}

// Close closes idle pooled connections. Open Conns are unaffected.
//
// For a stdio backend it stops every process and waits until each has
// been reaped: idle ones at once, those in use when their Conn is closed,
// or after the backend's timeout (30s when it has none), by which time
// any call would have timed out anyway; a call still running then fails.
func (c *Client) Close() {
	c.ht.CloseIdleConnections()
	if c.tokens != nil {
		c.tokens.Close()
	}
	if c.pool != nil {
		grace := c.cfg.Timeout
		if grace <= 0 {
			grace = 30 * time.Second
		}
		c.pool.close(grace)
	}
}

// withTimeout bounds ctx by Config.Timeout, tagging expiry with a
// timeoutError cause so errors say which limit fired.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.cfg.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return WithTimeout(ctx, c.cfg.Timeout)
}

// WithTimeout bounds ctx by d as a backend's timeout does: a caller that
// bounds a backend's work by the same timeout (the router's discovery)
// uses it, so that whichever deadline fires first, the error says "timed
// out after d", not "context deadline exceeded".
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &timeoutError{d})
}

// Handshake says how Open establishes the backend session.
type Handshake struct {
	ProtocolVersion    string          // version to request (e.g. "2025-11-25"); empty: the latest known for the transport
	ClientInfo         json.RawMessage // sent as params.clientInfo; a gateway default if nil
	ClientCapabilities json.RawMessage // sent as params.capabilities ({} if nil)
	// LogLevel, for a 2026-07-28 connection, is the _meta logLevel of its
	// requests (the client's; "" sends none, and the backend logs nothing).
	LogLevel string
	// SkipInitialize sends requests directly, with ProtocolVersion as
	// MCP-Protocol-Version, for a backend known to be stateless. Streamable
	// HTTP only: a legacy SSE session is its GET stream and always needs
	// the handshake. With protocol 2026-07-28 it is the only way: the
	// connection is then a modern one (see modern.go).
	SkipInitialize bool
	// SessionID reuses an existing backend session: no handshake, requests
	// carry this Mcp-Session-Id and ProtocolVersion. Streamable HTTP only.
	SessionID string
}

// InitResult is what the handshake learned.
type InitResult struct {
	Raw             json.RawMessage // the initialize result, verbatim
	ProtocolVersion string          // the negotiated version
	SessionID       string          // "" = the backend is stateless (always "" for legacy SSE)
}

// Open opens a per-request connection. Unless SkipInitialize or SessionID
// is set (Streamable HTTP), it performs initialize and
// notifications/initialized. Failures are *Error values naming the backend;
// a JSON-RPC error answer to initialize is an *Error wrapping *jsonrpc.Error.
func (c *Client) Open(ctx context.Context, h Handshake, downstream http.Header) (*Conn, error) {
	if c.urlErr != nil {
		return nil, c.newError("open", 0, c.urlErr)
	}
	if c.cfg.Transport == TransportOpenAPI {
		return c.openREST(ctx, h, downstream)
	}
	openCtx, cancel := c.withTimeout(ctx)
	defer cancel()
	hdr, err := c.requestHeaders(openCtx, downstream)
	if err != nil {
		return nil, err // nothing was sent to the backend
	}
	conn := newConn(c, hdr)
	conn.span = trace.SpanContextFromContext(ctx)

	switch c.cfg.Transport {
	case TransportStdio:
		err = c.openStdio(openCtx, conn, h)
	case TransportSSE:
		if h.ProtocolVersion == "" {
			h.ProtocolVersion = wire.LegacySSEProtocolVersion
		}
		var l *legacySSE
		if l, err = openLegacySSE(openCtx, conn); err == nil {
			conn.t = l // never a typed nil: Close checks conn.t
			err = conn.handshake(openCtx, h)
		}
	case TransportStreamableHTTP, "":
		conn.t = &streamable{conn: conn}
		if h.ProtocolVersion == "" {
			h.ProtocolVersion = wire.LatestProtocolVersion
		}
		switch {
		case h.SessionID != "":
			conn.sessionID, conn.protocolVersion = h.SessionID, h.ProtocolVersion
			// A kept backend session may carry several of the gateway
			// session's requests at once (a batch, concurrent calls), each
			// on its own Conn: their request ids must differ within the
			// session, so a joining Conn numbers from a random base.
			conn.nextID.Store(rand.Int64N(1 << 50))
		case h.SkipInitialize && h.ProtocolVersion == wire.ModernProtocolVersion:
			conn.protocolVersion = h.ProtocolVersion
			conn.meta = modernMeta(h)
		case h.SkipInitialize:
			conn.protocolVersion = h.ProtocolVersion
			conn.expectStateless = true
		default:
			err = conn.handshake(openCtx, h)
		}
	default:
		err = c.newError("open", 0, fmt.Errorf("unknown transport %q", c.cfg.Transport))
	}
	if err != nil {
		if openCtx.Err() != nil && c.cfg.Transport != TransportStdio { // stdio says what it waited for
			err = c.contextError("initialize", openCtx)
		}
		_ = conn.Close(false)
		return nil, err
	}
	return conn, nil
}

// initializeParams builds the params of an initialize request for h. The
// capabilities and clientInfo are JSON the gateway has checked (the
// client's initialize or _meta, its own identity): they are written as
// they are, not validated and compacted again on every per-request
// handshake.
func initializeParams(h Handshake) (json.RawMessage, error) {
	caps, info := h.ClientCapabilities, h.ClientInfo
	if len(caps) == 0 {
		caps = json.RawMessage(`{}`)
	}
	if len(info) == 0 {
		info = json.RawMessage(`{"name":"mcpgw","version":"0"}`)
	}
	b := make([]byte, 0, len(`{"protocolVersion":"","capabilities":,"clientInfo":}`)+len(h.ProtocolVersion)+len(caps)+len(info))
	b = append(b, `{"protocolVersion":`...)
	b = append(b, wire.Quoted(h.ProtocolVersion)...)
	b = append(b, `,"capabilities":`...)
	b = append(b, caps...)
	b = append(b, `,"clientInfo":`...)
	b = append(b, info...)
	return append(b, '}'), nil
}

// handshake performs initialize and notifications/initialized.
func (conn *Conn) handshake(ctx context.Context, h Handshake) error {
	const op = "initialize"
	params, err := initializeParams(h)
	if err != nil {
		return conn.c.newError(op, 0, fmt.Errorf("encoding params: %w", err))
	}
	resp, err := conn.t.roundTrip(ctx, conn.newCall(ctx, op, params), conn.dispatcher(nil), CallOptions{})
	if err != nil {
		return err
	}
	if resp.Error != nil {
		return conn.c.newError(op, 0, resp.Error)
	}
	var res struct{ ProtocolVersion string }
	raw, _ := wire.MemberValue(resp.Result, "protocolVersion") // the decoder checked the JSON
	if res.ProtocolVersion, _ = wire.String(raw); res.ProtocolVersion == "" {
		return conn.c.newError(op, 0, errors.New("malformed initialize result"))
	}
	// The spec lets the server answer with another version; one we cannot
	// speak means we must disconnect rather than guess the wire rules.
	if res.ProtocolVersion != h.ProtocolVersion && !wire.KnowsProtocolVersion(res.ProtocolVersion) {
		return conn.c.newError(op, 0, fmt.Errorf("unsupported protocol version %q", res.ProtocolVersion))
	}
	conn.mu.Lock()
	conn.protocolVersion = res.ProtocolVersion
	conn.mu.Unlock()
	conn.init = &InitResult{Raw: resp.Result, ProtocolVersion: res.ProtocolVersion, SessionID: conn.SessionID()}
	return conn.t.send(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
}
