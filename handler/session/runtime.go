// Package session is the cross-instance runtime of 2025-era MCP sessions:
// what a session needs beyond the federation core (package router) when any
// of its requests may land on any instance. It holds GET streams and their
// backend listeners, cancels in-flight requests from wherever the cancel
// arrives, carries server-to-client requests and their answers between
// instances, logs calls answered as event streams so they can be resumed
// elsewhere, and dispatches the store's bus for all of these.
//
// A 2026-07-28 request has no session and never reaches this package (a
// call of one parked on a 2025-era backend is a task the router runs:
// router/parking.go). The handler composes the two: it asks this
// package to track a request and to carry its server-to-client requests
// (router.SessionCaller.Runtime), and the router to route it.
package session

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Backends is what the runtime needs of the federation core to keep a GET
// stream fed: *router.Router implements it.
type Backends interface {
	// ListenTargets lists the backends of the session's virtual host that
	// can send it something unsolicited; ok is false when the virtual host
	// is no longer configured.
	ListenTargets(sess *store.Session) (targets []router.ListenTarget, ok bool)
	// ListenBackend keeps one listening connection to a target until ctx
	// ends, passing it each notification, renamed for the client.
	ListenBackend(ctx context.Context, sess *store.Session, hdr http.Header, t router.ListenTarget, emit func(*jsonrpc.Request), up func()) error
	// EndBackendSessions ends the backend sessions a gateway session kept.
	EndBackendSessions(ctx context.Context, sess *store.Session)
}

// Options configure a Runtime. Zero values mean the defaults.
type Options struct {
	// SessionTTL is the sliding lifetime of a session (default 1h).
	SessionTTL time.Duration
	// ClientRequestTimeout bounds how long a backend's sampling,
	// elicitation or roots request waits for the client (default 5m: a
	// human may be answering). The backend's own timeout still applies.
	ClientRequestTimeout time.Duration
	// EventLogSize bounds each session's event log (default 1000 events).
	EventLogSize int
	// StreamLinger keeps a session's backend listeners running after its
	// GET stream drops (default 30s), so a client reconnecting with
	// Last-Event-ID, on any instance, misses nothing.
	StreamLinger time.Duration
	// CallLeaseTTL is the lease of the instance running a call answered as
	// an event stream, renewed every third of it while the call runs
	// (default 10s): a resume elsewhere gives up on a call whose instance
	// has been gone this long.
	CallLeaseTTL time.Duration
	Logger       *slog.Logger
}

// Store is what the session runtime uses of the shared store: session
// records, the marks and bus that carry cancels and server-to-client
// requests across instances, event logs and stream leases.
type Store interface {
	store.Sessions
	store.Marks
	store.Bus
	store.EventLog
	store.Leases
	Ping(ctx context.Context) error
}

// Runtime is this instance's part of the session runtime.
type Runtime struct {
	store    Store
	backends Backends
	opts     Options
	log      *slog.Logger

	inflight *inflight
	streams  *streamHub

	mu      sync.Mutex
	stopBus func() // set by Start
	closed  bool
}

// New returns a runtime; it does no I/O until Start.
func New(st Store, backends Backends, opts Options) *Runtime {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = time.Hour
	}
	if opts.ClientRequestTimeout <= 0 {
		opts.ClientRequestTimeout = 5 * time.Minute
	}
	if opts.EventLogSize <= 0 {
		opts.EventLogSize = 1000
	}
	if opts.StreamLinger <= 0 {
		opts.StreamLinger = 30 * time.Second
	}
	if opts.CallLeaseTTL <= 0 {
		opts.CallLeaseTTL = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	rt := &Runtime{store: st, backends: backends, opts: opts, log: opts.Logger, inflight: newInflight()}
	rt.streams = newStreamHub(rt)
	return rt
}

// Start subscribes to the store's bus, which carries cancels, client
// answers and stream handovers from the other instances. Until it returns
// those are not received; a request handled meanwhile still sees a cancel
// through the session's marks. An error (the store did not confirm within
// ctx) leaves the subscription coming up in the background.
func (rt *Runtime) Start(ctx context.Context) error {
	stop, err := rt.store.Subscribe(ctx, rt.onBus)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		stop()
		return nil
	}
	rt.stopBus = stop
	return err
}

// Close stops the bus subscription and ends every GET stream this instance
// holds (their clients resume elsewhere), waiting for their goroutines.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	rt.closed = true
	stop := rt.stopBus
	rt.mu.Unlock()
	if stop != nil {
		stop()
	}
	rt.streams.closeAll()
	rt.streams.wait()
}

// EndStreams ends every GET stream this instance holds and releases their
// claims, so clients reconnect (and resume) on another instance. Servers
// call it when shutting down, before waiting for connections to drain.
func (rt *Runtime) EndStreams() { rt.streams.closeAll() }

// VHostsChanged tells the GET streams of the named virtual hosts that
// their configuration changed (router.Router.Reload returns the names):
// each gets list_changed notifications and rebuilds its listeners.
func (rt *Runtime) VHostsChanged(names []string) {
	if len(names) == 0 {
		return
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	rt.streams.vhostChanged(set)
}

// onBus dispatches what other instances (and this one) publish. It runs on
// the store's bus goroutine and must not block.
func (rt *Runtime) onBus(m store.BusMessage) {
	if m.To != "" && m.To != rt.store.InstanceID() {
		return
	}
	switch m.Kind {
	case store.BusCancel:
		rt.inflight.cancelCall(m.Session, m.ID)
	case store.BusResponse:
		rt.deliverFromBus(m)
	case store.BusStreamTaken, store.BusSubscriptions, store.BusNotify, store.BusSessionEnded:
		rt.streams.onBus(m)
	}
}

// DeleteSession ends a session: every store key of it is removed, the
// backend sessions it kept are ended, and the instance holding its GET
// stream (if any) ends it and closes its backend listeners, so nothing of
// the session outlives it.
func (rt *Runtime) DeleteSession(ctx context.Context, sess *store.Session) error {
	if err := rt.store.DeleteSession(ctx, sess.ID); err != nil {
		return err
	}
	rt.backends.EndBackendSessions(ctx, sess)
	if err := rt.store.Publish(ctx, store.BusMessage{Kind: store.BusSessionEnded, Session: sess.ID}); err != nil {
		rt.log.Warn("announcing session end failed", "error", err)
	}
	return nil
}

// ListenersChanged tells the instance holding the session's GET stream to
// restart its backend listeners (subscriptions or log level changed).
func (rt *Runtime) ListenersChanged(ctx context.Context, sid store.SessionID) {
	if err := rt.store.Publish(ctx, store.BusMessage{Kind: store.BusSubscriptions, Session: sid}); err != nil {
		rt.log.Warn("publishing listener change failed", "error", err)
	}
}

// ownerPrefix is the instance part of a stream owner id "<instance>/<nonce>".
func ownerPrefix(owner string) string {
	inst, _, _ := strings.Cut(owner, "/")
	return inst
}

// Load returns session id, refreshing its sliding lifetime: the one store
// read of a request of a 2025-era session. store.ErrNotFound if it does
// not exist or has expired; the caller checks it belongs to the caller.
func (rt *Runtime) Load(ctx context.Context, id store.SessionID) (*store.Session, error) {
	return rt.store.LoadSession(ctx, id, rt.opts.SessionTTL)
}

// Ping reports whether the store answers: without it no session can be
// served, so the instance is not ready.
func (rt *Runtime) Ping(ctx context.Context) error { return rt.store.Ping(ctx) }
