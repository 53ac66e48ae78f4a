// Package app assembles a gateway from its config: store, router and
// handler. Both entry points (the plain HTTP server and the Lambda
// function) build the same thing through it.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/mcpgw/gateway/handler/session"

	"github.com/mcpgw/gateway/handler"
	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/handler/authserver"
	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/buildinfo"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/tracing"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// App is an assembled gateway.
type App struct {
	Handler http.Handler
	// Admin serves the operator endpoints (/healthz, /readyz, /metrics,
	// /status) when WithAdminListener asked for them apart; Handler then
	// serves none of them. nil otherwise.
	Admin    http.Handler
	Router   *router.Router
	Sessions *session.Runtime
	Store    store.Store
	// Audit writes the audit trail; nil when config audit is absent.
	// ReopenAudit reopens its file (SIGHUP).
	Audit *audit.Writer
	// tracing is the tracer provider Build made from the config: the App
	// flushes and shuts it down.
	tracing *tracing.Provider
	// auth is the caller verifier, whose key fetchers Close stops.
	auth auth.Verifier
	// tasks runs the tasks the gateway runs for backends (nil with
	// WithoutParking, unless WithTaskLauncher runs them elsewhere).
	tasks *taskrun.Runner
	// parks holds 2026-07-28 calls parked on 2025-era backends (nil with
	// WithoutParking).
	parks *router.Parking
}

// Option adjusts what Build assembles.
type Option func(*buildOptions)

type buildOptions struct {
	noMetrics, noParking bool
	admin                bool
	build                buildinfo.Info
	taskLauncher         router.TaskLauncher
}

// WithBuildInfo names the build being assembled: its version is the
// gateway's serverInfo.version, and mcpgw_build_info carries all of it.
// Entry points read it with buildinfo.Read from the values stamped at link
// time; without this option the version is "devel".
func WithBuildInfo(bi buildinfo.Info) Option { return func(o *buildOptions) { o.build = bi } }

// WithoutMetrics leaves out Prometheus metrics and GET /metrics: for entry
// points where the listener is public and scraping makes no sense (a Lambda
// Function URL, whose execution environments come and go).
func WithoutMetrics() Option { return func(o *buildOptions) { o.noMetrics = true } }

// WithAdminListener moves the operator endpoints off Handler onto
// App.Admin, which the caller serves on a listener of its own (gateway
// --admin-listen): the MCP port then serves none of them.
func WithAdminListener() Option { return func(o *buildOptions) { o.admin = true } }

// WithoutParking leaves out parking 2026-07-28 calls to 2025-era backends
// across the rounds in which the backend asks the client something: for
// entry points where an invocation cannot outlive its answer (Lambda). Such
// a backend's request then gets -32601.
func WithoutParking() Option { return func(o *buildOptions) { o.noParking = true } }

// WithTaskLauncher runs the tasks the gateway runs for backends (tasks:
// blocks) through l instead of in the process that creates them: for
// entry points where a request cannot outlive its answer (Lambda, which
// also passes WithoutParking). Whatever l starts calls App.RunTask.
func WithTaskLauncher(l router.TaskLauncher) Option {
	return func(o *buildOptions) { o.taskLauncher = l }
}

// Build opens the store (Redis when redisURL is set, else in-memory) and
// wires router and handler. The caller must Close the App.
func Build(cfg *config.Config, redisURL string, log *slog.Logger, options ...Option) (*App, error) {
	b := &builder{cfg: cfg, log: log, bo: buildOptions{build: buildinfo.Info{Version: "devel", Commit: "unknown"}}}
	for _, o := range options {
		o(&b.bo)
	}
	if err := auth.Check(cfg.Auth); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	a, err := b.build(redisURL)
	if err != nil {
		// What was built is released in reverse; once the App is
		// returned, its Close releases it.
		for i := len(b.undo) - 1; i >= 0; i-- {
			b.undo[i]()
		}
		return nil, err
	}
	return a, nil
}

// builder holds what Build has assembled so far, and how to release it if
// a later step fails.
type builder struct {
	cfg  *config.Config
	log  *slog.Logger
	bo   buildOptions
	undo []func()
	app  App
	m    *metrics.Metrics // nil WithoutMetrics
	// signInPages serve user_oauth sign-in (nil: no such backend).
	signInPages http.Handler
}

// build runs Build's steps in order: the parts the router needs, the
// router, then what serves it.
func (b *builder) build(redisURL string) (*App, error) {
	if err := b.openStorage(redisURL); err != nil {
		return nil, err
	}
	if err := b.buildRouter(); err != nil {
		return nil, err
	}
	hopts, err := b.handlerOptions()
	if err != nil {
		return nil, err
	}
	a := &b.app
	if b.bo.admin {
		a.Admin = handler.Admin(hopts)
	}
	a.Handler = handler.New(hopts)
	return a, nil
}

// openStorage opens the audit file and the store, first of what Close
// releases: a file that cannot be opened fails the build before anything
// else is started.
func (b *builder) openStorage(redisURL string) error {
	cfg := b.cfg
	if cfg.Audit.Output != "" {
		aw, err := audit.Open(cfg.Audit.Output, cfg.Audit.Buffer, b.log)
		if err != nil {
			return err
		}
		b.app.Audit = aw
		b.undo = append(b.undo, aw.Close)
	}
	if redisURL != "" {
		rs, err := store.NewRedis(redisURL, store.RedisOptions{Timeout: cfg.Store.Timeout})
		if err != nil {
			return err
		}
		b.app.Store = rs
	} else {
		b.log.Warn("no Redis URL set: using the embedded in-memory store; sessions live in this process only, so run a single instance")
		b.app.Store = store.NewMemory()
	}
	st := b.app.Store
	b.undo = append(b.undo, func() { _ = st.Close() })
	return nil
}

// buildRouter makes the tracer, the metrics, the task runner and the
// router over them.
func (b *builder) buildRouter() error {
	cfg, bo, a := b.cfg, b.bo, &b.app
	tr, err := tracing.New(context.Background(), tracing.Settings{Config: cfg.Tracing, Getenv: os.Getenv, ServiceVersion: bo.build.Version, Logger: b.log})
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	a.tracing = tr
	b.undo = append(b.undo, func() { _ = tr.Shutdown(context.Background()) })
	// Metrics are on by default: collecting costs little, and an operator
	// should not need a redeploy to start scraping.
	var observer router.Observer // a nil interface: the router skips timing
	if !bo.noMetrics {
		b.m = metrics.New()
		b.m.SetBuildInfo(bo.build.Version, bo.build.Commit, bo.build.GoVersion)
		observer = b.m
	}
	// Tasks the gateway runs outlive the request that made them: not
	// with WithoutParking, where an invocation cannot, unless a launcher
	// runs them in another (Lambda's asynchronous invocation).
	if !bo.noParking || bo.taskLauncher != nil {
		if a.tasks, err = taskRunner(cfg, a.Store, a.Audit, b.log); err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
	}
	// The user_oauth token source, which the router's backend clients
	// read, and the sign-in pages that fill it.
	var users credentials.UserTokenSource
	if b.signInPages, users, err = signIn(cfg, a.Store, b.log); err != nil { // sign_in.go
		return err
	}
	rt := router.New(cfg.VirtualHosts, router.Options{
		UserTokens:   users,
		Tasks:        a.tasks,
		TaskLauncher: bo.taskLauncher,
		Store:        a.Store,
		SessionTTL:   cfg.SessionTTL,
		CursorSecret: cfg.CursorSecret,
		Logger:       b.log,
		Info:         router.Implementation{Name: "mcpgw", Title: "MCP gateway", Version: bo.build.Version},
		Observer:     observer,
		// Passed in, never registered globally (otel.SetTracerProvider):
		// an embedder's own tracing, or a second gateway in the process,
		// is left alone.
		TracerProvider:      tr.TracerProvider(),
		ListensPerPrincipal: cfg.Limits.ListensPerPrincipal,
		ListenURIs:          cfg.Limits.ListenURIs,
		MaxPageItems:        cfg.MaxPageItems,
		DiscoveryMinTTL:     cfg.Discovery.MinTTL,
		DiscoveryMaxTTL:     cfg.Discovery.MaxTTL,
	})
	a.Router = rt
	b.m.ObservePools(func() []metrics.PoolSample { return poolSamples(rt.Status()) })
	// Keys of identity providers are fetched in the background from now
	// on; nothing here waits for a provider.
	b.undo = append(b.undo, rt.Close)
	if a.tasks != nil {
		b.undo = append(b.undo, a.tasks.Close) // before the router: its runs use the router's backend clients
	}
	return nil
}

// handlerOptions makes what serves the router: the authorization server
// and verifier, the session runtime, the audit trail, sign-in pages and
// parking, gathered into the handler's options.
func (b *builder) handlerOptions() (handler.Options, error) {
	cfg, a, log := b.cfg, &b.app, b.log
	as, asAuth, err := authServer(cfg, a.Store, a.Router, log) // auth_server.go
	if err != nil {
		return handler.Options{}, fmt.Errorf("auth.authorization_server: %w", err)
	}
	if a.auth, err = auth.New(cfg.Auth, append([]auth.Option{auth.WithLogger(log)}, asAuth...)...); err != nil {
		return handler.Options{}, fmt.Errorf("auth: %w", err)
	}
	a.Sessions = session.New(a.Store, a.Router, session.Options{
		SessionTTL:           cfg.SessionTTL,
		EventLogSize:         cfg.Streams.EventLogSize,
		StreamLinger:         cfg.Streams.Linger,
		CallLeaseTTL:         cfg.Streams.CallLease,
		ClientRequestTimeout: cfg.Streams.ClientRequestTimeout,
		Logger:               log,
	})
	var aud *handler.Audit
	if a.Audit != nil {
		b.m.ObserveAuditDropped(a.Audit.DroppedFor, audit.DropReasons)
		aud = &handler.Audit{Writer: a.Audit, Arguments: cfg.Audit.Arguments, TrustedProxies: cfg.Audit.TrustedProxies}
	}
	// Calls parked on 2025-era backends are tasks of a runner of their
	// own (router/parking.go): not with WithoutParking.
	if !b.bo.noParking {
		a.parks, err = router.NewParking(router.ParkOptions{Store: a.Store, PerPrincipal: cfg.Limits.ParkedCallsPerPrincipal,
			Lease: cfg.Streams.CallLease, AnswerWithin: cfg.Streams.ClientRequestTimeout,
			FinishedBytes: cfg.Limits.FinishedTaskBytesPerPrincipal, Logger: log})
		if err != nil {
			return handler.Options{}, fmt.Errorf("parking: %w", err)
		}
	}
	var asHandler http.Handler
	if as != nil {
		asHandler = as.Handler()
	}
	return handler.Options{
		AuthServer:      asHandler,
		AuthServerPaths: authserver.Paths(),
		SignIn:          b.signInPages,
		Router:          a.Router,
		Sessions:        a.Sessions,
		Parks:           a.parks,
		Auth:            a.auth,
		AllowedHosts:    cfg.AllowedHosts,
		AllowedOrigins:  cfg.AllowedOrigins,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		MaxBatch:        cfg.MaxBatch,
		ReadTimeout:     cmp.Or(cfg.Server.ReadTimeout, config.DefaultReadTimeout),
		ResponseBudget:  upstream.NewBudget(cmp.Or(cfg.Limits.InflightResponseBytes, config.DefaultInflightResponseBytes)),
		Logger:          log,
		Metrics:         b.m,
		// GET /status goes where GET /metrics goes, under the same rules.
		Status:    !b.bo.noMetrics,
		KeepAlive: cfg.Streams.KeepAlive,
		// Only with JWT auth: validation refuses it otherwise.
		ResourceMetadata: cfg.Auth.ResourceMetadata,
		ResourceBaseURL:  cfg.Auth.ResourceBaseURL(cfg.PublicURL),
		Audit:            aud,
		Cards:            cards(cfg, b.bo.build.Version),
		AdminElsewhere:   b.bo.admin,
	}, nil
}

// cards configures the Server Cards: the base URL clients reach (public_url,
// else resource_metadata's), the gateway's version, whether tokens are asked.
func cards(cfg *config.Config, version string) *handler.Cards {
	c := &handler.Cards{PublicURL: cfg.PublicURL, Version: version, BearerAuth: cfg.Auth.Mode == config.ModeJWT}
	if rm := cfg.Auth.ResourceMetadata; c.PublicURL == "" && rm != nil {
		c.PublicURL = rm.PublicURL
	}
	return c
}

// taskRunner is the runner of the tasks the gateway runs, within the
// config's limits, each task's end in the audit trail aw writes (if any).
func taskRunner(cfg *config.Config, st store.Store, aw *audit.Writer, log *slog.Logger) (*taskrun.Runner, error) {
	opts := taskrun.Options{Store: st, Lease: cfg.Streams.CallLease, PerPrincipal: cfg.Limits.TasksPerPrincipal,
		FinishedBytes: cfg.Limits.FinishedTaskBytesPerPrincipal, FirstRoundWithin: cfg.Streams.ClientRequestTimeout, Logger: log}
	if aw != nil {
		opts.Ended = handler.AuditTaskEnd(aw)
	}
	return taskrun.New(opts)
}

// RunTask runs a task this gateway's TaskLauncher launched
// (router.Router.RunTask).
func (a *App) RunTask(ctx context.Context, owner, id string) error {
	return a.Router.RunTask(ctx, owner, id)
}

// FlushTraces exports the spans ended so far, within ctx. On Lambda it
// runs before each invocation ends: a frozen execution environment sends
// nothing, and one that is never thawed again loses what it held.
func (a *App) FlushTraces(ctx context.Context) error {
	return a.tracing.ForceFlush(ctx)
}

// Start subscribes the router, the session runtime, the task runner and
// the parked calls to the store's bus, waiting at most until ctx ends. An
// error means the store did not confirm in time: the gateway serves anyway (the subscription keeps trying in the
// background, and /readyz tells the load balancer), so callers log it.
func (a *App) Start(ctx context.Context) error {
	var tasks, parks error
	if a.tasks != nil {
		tasks = a.tasks.Subscribe(ctx)
	}
	if a.parks != nil {
		parks = a.parks.Subscribe(ctx)
	}
	return errors.Join(a.Router.Start(ctx), a.Sessions.Start(ctx), tasks, parks)
}

// Close ends the session runtime's streams, then the router's background
// work and the auth key fetchers, then the store, each after everything that uses it has stopped,
// and last exports the spans that are left (within traceShutdownTimeout).
func (a *App) Close() error {
	a.Sessions.Close()
	if a.tasks != nil {
		a.tasks.Close() // its runs use the router's backend clients
	}
	if a.parks != nil {
		a.parks.Close() // likewise
	}
	a.Router.Close()
	auth.Close(a.auth)
	if a.Audit != nil {
		a.Audit.Close() // after every request: what they wrote is flushed
	}
	err := a.Store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
	defer cancel()
	return errors.Join(err, a.tracing.Shutdown(ctx))
}

// traceShutdownTimeout bounds the last export at Close: a collector that
// is down must not hold up a shutdown.
const traceShutdownTimeout = 5 * time.Second

// poolSamples are the stdio backends' pools in the router's status view,
// for mcpgw_stdio_* (read at each scrape).
func poolSamples(st router.Status) []metrics.PoolSample {
	var out []metrics.PoolSample
	for _, vh := range st.VHosts {
		for _, b := range vh.Backends {
			if p := b.Pool; p != nil {
				out = append(out, metrics.PoolSample{VHost: vh.Name, Backend: b.Key, Running: p.Running, Idle: p.Idle,
					Starting: p.Starting, Started: p.Started, Crashed: p.Crashed})
			}
		}
	}
	return out
}
