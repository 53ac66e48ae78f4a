// Package handler is the downstream side of the gateway: the MCP Streamable
// HTTP transport (POST/GET/DELETE on /servers/{vhost}/mcp), authentication,
// Host/Origin checks, JSON-RPC decoding and session lookup. It hands every
// decoded request to the router and holds no session state itself.
package handler

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/handler/session"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
)

// DefaultMaxBodyBytes bounds a POST body when config sets no limit.
const DefaultMaxBodyBytes = 4 << 20

// Options configure the gateway's HTTP handler.
type Options struct {
	Router *router.Router
	// Sessions is the session runtime of 2025-era sessions: session
	// lookup, cancellation, server-to-client requests, GET streams and
	// resumable calls, across instances.
	Sessions *session.Runtime
	// Parks holds 2026-07-28 calls to 2025-era backends that ask the
	// client something, across rounds (a router.Parking: hidden
	// gateway-run tasks); nil where an invocation cannot outlive its
	// answer (Lambda): the backend's request then gets -32601.
	Parks *router.Parking
	Auth  auth.Verifier
	// AllowedHosts is the Host header allow-list (DNS rebinding
	// protection); empty allows any Host.
	AllowedHosts []string
	// AllowedOrigins lists the browser origins that may call the MCP
	// endpoint besides the gateway's own (same-origin requests, and
	// requests without Origin, always pass); a request carrying any other
	// Origin gets 403, also when the list is empty.
	AllowedOrigins []string
	MaxBodyBytes   int64
	// MaxBatch bounds the length of a JSON-RPC batch (2025-03-26); a
	// longer one is refused whole (default DefaultMaxBatch).
	MaxBatch int
	// ReadTimeout bounds reading a request's body, from the start of the
	// handler; a body still arriving then is answered 408. The deadline
	// is lifted once the body has been read, so it never cuts a GET
	// stream or a long call (read_deadline.go). 0: unbounded.
	ReadTimeout time.Duration
	// ResponseBudget, when set, bounds the backend answer bytes the
	// instance holds at once: each request's are counted from the moment
	// they are read until its answer has been written (config
	// limits.inflight_response_bytes; see router/upstream/response_budget.go).
	// nil: unbounded.
	ResponseBudget *upstream.Budget
	Logger         *slog.Logger
	// Metrics, when set, instruments the MCP endpoint and is served on
	// GET /metrics; nil disables both.
	Metrics *metrics.Metrics
	// Status serves GET /status (status.go): the router's view of its
	// backends, for operators. Like /metrics it has no auth: only where
	// the listener is not public.
	Status bool
	// AdminElsewhere leaves the operator endpoints (/healthz, /readyz,
	// /metrics, /status) off this handler, so the MCP port serves none of
	// them: an admin listener serves Admin(opts) instead (operator.go).
	AdminElsewhere bool
	// KeepAlive is how often an idle SSE stream carries a comment, so
	// proxies and load balancers with idle timeouts keep it open: the GET
	// stream, and a call's answer while the call runs (default 15s).
	KeepAlive time.Duration
	// ResourceMetadata, when set, is served as OAuth 2.0 Protected
	// Resource Metadata and named in 401 challenges (resource_metadata.go).
	ResourceMetadata *config.ResourceMetadata
	// ResourceBaseURL, when set, is the gateway's public URL: each vhost's
	// canonical resource URL, {ResourceBaseURL}/servers/{vhost}/mcp, is an
	// audience every issuer's tokens are accepted for (handler/auth
	// audience.go). Empty: only the configured audiences.
	ResourceBaseURL string
	// Audit, when set, writes the audit trail (audit_trail.go).
	Audit *Audit
	// Cards, when set, serves each vhost's Server Card and the domain's AI
	// Catalog (server_card.go); nil serves none.
	Cards *Cards
	// SignIn, when set, serves the user_oauth sign-in pages under
	// /oauth/ (handler/connect). (The tokens they keep reach user_oauth
	// backends through router.Options.UserTokens.)
	SignIn http.Handler
	// AuthServer, when set, is the gateway's own OAuth authorization
	// server (handler/authserver), served on the paths AuthServerPaths
	// lists (its metadata's well-known URLs and /oauth2/).
	AuthServer      http.Handler
	AuthServerPaths []string
}

// New returns the gateway's http.Handler: the one handler that runs under
// the plain HTTP server and on AWS Lambda alike.
func New(opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	s := &server{opts: opts, log: opts.Logger}

	mux := http.NewServeMux()
	if !opts.AdminElsewhere {
		s.routeOperator(mux) // operator.go
	}

	var challenge func(*http.Request) string
	if opts.ResourceMetadata != nil {
		// Public documents, outside the MCP chain like the probes.
		mux.HandleFunc("GET "+wellKnownPRM, s.serveResourceMetadata)
		mux.HandleFunc("GET "+wellKnownPRM+"/servers/{vhost}/mcp", s.serveResourceMetadata)
		challenge = s.challengeParams
	}

	if opts.AuthServer != nil {
		for _, p := range opts.AuthServerPaths {
			mux.Handle(p, checkHost(opts.AllowedHosts)(opts.AuthServer))
		}
	}
	if opts.SignIn != nil {
		mux.Handle("/oauth/", checkHostOrigin(opts.AllowedHosts, opts.AllowedOrigins)(opts.SignIn))
	}
	if opts.Cards != nil {
		s.routeCards(mux) // public documents, outside the MCP chain
	}

	mcp := chain(http.HandlerFunc(s.serveMCP),
		opts.Metrics.Middleware(opts.Router.HasVHost), // first: refusals count too
		checkHostOrigin(opts.AllowedHosts, opts.AllowedOrigins),
		s.requireVHost,
		s.noteChallenge,
		withResource(opts.ResourceBaseURL),
		auth.MiddlewareReporting(opts.Auth, "mcpgw", challenge, noteAuthFailure),
		withBackendCaller,
		requireSingleHeaders,
	)
	mux.Handle("/servers/{vhost}/mcp", mcp)
	return limitBodyRead(opts.ReadTimeout)(logRequests(opts.Logger, opts.Audit, opts.Router.RouteOf)(mux))
}

type server struct {
	opts       Options
	log        *slog.Logger
	statusPage *template.Template // GET /status as HTML (status.go); nil when not served
}

// chain wraps h so that the first middleware runs first.
func chain(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz reports whether the store answers: an instance that cannot reach
// Redis cannot serve any session, so the load balancer should skip it.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	if err := s.opts.Sessions.Ping(ctx); err != nil {
		s.log.Warn("readiness check failed", "error", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"store unreachable"}` + "\n"))
		return
	}
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// requireVHost answers 404 for a virtual host that is not configured,
// before authentication, so unknown paths cost nothing.
func (s *server) requireVHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if vhost := r.PathValue("vhost"); !s.opts.Router.HasVHost(vhost) {
			s.refuseUnknownVHost(w, vhost)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveMCP dispatches the Streamable HTTP methods.
func (s *server) serveMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodDelete:
		s.serveDELETE(w, r)
	case http.MethodGet:
		s.serveGET(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeHTTPError(w, http.StatusMethodNotAllowed, codeInvalidRequest, "method not allowed")
	}
}
