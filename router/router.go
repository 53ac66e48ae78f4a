// Package router holds the MCP semantics of the gateway: it fans list
// methods out to every backend of a virtual host and merges the results,
// routes targeted methods to one backend by alias or prefix, federates
// pagination cursors, merges capabilities, and runs hooks. It keeps no
// session state of its own: everything it needs between requests is in the
// store, and every backend connection lives for one request.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/router/wire"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Protocol versions the gateway speaks downstream, newest first.
var SupportedProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// LatestProtocolVersion is offered to clients that ask for an unknown
// version, and requested from backends at initialize.
const LatestProtocolVersion = "2025-11-25"

// DefaultProtocolVersion is assumed when a client sends no
// MCP-Protocol-Version header (the transport spec's rule).
const DefaultProtocolVersion = "2025-03-26"

// Implementation is the gateway's own serverInfo/clientInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// Options configure a Router.
type Options struct {
	Store      store.Store
	SessionTTL time.Duration
	// CursorSecret signs pagination cursors. When nil, a key is generated
	// once and kept in the store, shared by every instance.
	CursorSecret []byte
	Hooks        []Hook
	Logger       *slog.Logger
	Info         Implementation
	// ReprobeInterval is the least time between two initialize attempts on
	// a backend whose snapshot records a failure (default 5s), so a down
	// backend does not add its connect time to every list request.
	ReprobeInterval time.Duration
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
	// (default 10s): a resume on another instance gives up on a call whose
	// instance has been gone this long.
	CallLeaseTTL time.Duration
	// Observer, when set, learns the duration and outcome of every backend
	// exchange of a list or routed request (metrics); nil costs nothing.
	Observer Observer
}

// Router serves the MCP methods of every configured virtual host.
type Router struct {
	opts  Options
	log   *slog.Logger
	table atomic.Pointer[routingTable]

	infoOnce sync.Once
	infoJSON json.RawMessage

	cleanup  sync.WaitGroup // background backend DELETEs (see release)
	inflight *inflight
	streams  *streamHub
	stopBus  func()

	cursorKeys *sharedKey
}

// New compiles the virtual hosts into a routing table.
func New(vhosts map[string]*VirtualHost, opts Options) *Router {
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = time.Hour
	}
	if opts.ReprobeInterval <= 0 {
		opts.ReprobeInterval = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClientRequestTimeout <= 0 {
		opts.ClientRequestTimeout = 5 * time.Minute
	}
	if opts.EventLogSize <= 0 {
		opts.EventLogSize = 1000
	}
	if opts.CallLeaseTTL <= 0 {
		opts.CallLeaseTTL = 10 * time.Second
	}
	if opts.StreamLinger <= 0 {
		opts.StreamLinger = 30 * time.Second
	}
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "mcpgw", Version: "dev"}
	}
	r := &Router{opts: opts, log: opts.Logger, inflight: newInflight(),
		cursorKeys: newSharedKey(opts.Store, cursorKeyName, opts.CursorSecret)}
	r.streams = newStreamHub(r)
	r.table.Store(newRoutingTable(vhosts))
	r.stopBus = opts.Store.Subscribe(r.onBus)
	return r
}

// Close stops the session streams this instance holds and releases the
// pooled backend connections.
func (r *Router) Close() {
	r.stopBus()
	r.streams.closeAll()
	r.cleanup.Wait()
	r.table.Load().close()
}

// EndStreams ends every GET stream this instance holds and releases their
// claims, so clients reconnect (and resume) on another instance. Servers
// call it when shutting down, before waiting for connections to drain.
func (r *Router) EndStreams() { r.streams.closeAll() }

// HasVHost reports whether a virtual host is configured.
func (r *Router) HasVHost(name string) bool {
	_, ok := r.table.Load().vhosts[name]
	return ok
}

// SessionTTL is the sliding lifetime of a session in the store.
func (r *Router) SessionTTL() time.Duration { return r.opts.SessionTTL }

// Store returns the store the router keeps sessions in.
func (r *Router) Store() store.Store { return r.opts.Store }

// Call is one downstream JSON-RPC request on an established session.
type Call struct {
	Session *store.Session
	// Header is the downstream request's headers, for passthrough_headers.
	Header  http.Header
	Request *jsonrpc.Request
	// Stream carries messages to the client while the call runs (the
	// POST's SSE stream): progress, log messages, server-to-client
	// requests. nil when the client accepts no event stream.
	Stream Stream
}

// Stream sends messages to the client during one call.
type Stream interface {
	// Send writes one message; it fails once the client has gone.
	Send(msg jsonrpc.Message) error
}

// Handle answers one request of an initialized session. It never returns
// nil for a call; for a notification it returns nil.
func (r *Router) Handle(ctx context.Context, c *Call) *jsonrpc.Response {
	v, ok := r.table.Load().vhosts[c.Session.VHost]
	if !ok {
		return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "virtual host %q is no longer configured", c.Session.VHost))
	}
	if !c.Request.IsCall() {
		return nil // notifications/initialized and friends need no answer
	}
	method := c.Request.Method
	switch method {
	case "ping":
		return resultResponse(c.Request.ID, json.RawMessage(`{}`))
	case "initialize":
		return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "session is already initialized"))
	case "logging/setLevel":
		return r.setLevel(ctx, c)
	}
	op, isList := listOps[method]
	_, isRouted := routedMethods[method]
	if !isList && !isRouted {
		return errorResponse(c.Request.ID, rpcError(CodeMethodNotFound, "method %s is not supported", wire.Quote(method)))
	}
	ctx, done := r.track(ctx, c)
	defer done()
	if ctx.Err() != nil { // cancelled before it arrived here
		return cancelledResponse(c.Request.ID)
	}
	var resp *jsonrpc.Response
	if isList {
		resp = r.list(ctx, v, c, op)
	} else {
		resp = r.routed(ctx, v, c)
	}
	if errors.Is(context.Cause(ctx), errCancelledByClient) {
		return cancelledResponse(c.Request.ID)
	}
	return resp
}

func (r *Router) setLevel(ctx context.Context, c *Call) *jsonrpc.Response {
	var p struct {
		Level string `json:"level"`
	}
	if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil || p.Level == "" {
		return errorResponse(c.Request.ID, invalidParams("logging/setLevel needs params.level"))
	}
	switch p.Level {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
	default:
		return errorResponse(c.Request.ID, invalidParams("unknown log level %s", wire.Quote(p.Level)))
	}
	switch err := r.opts.Store.SetLogLevel(ctx, c.Session.ID, p.Level, r.opts.SessionTTL); {
	case errors.Is(err, store.ErrNotFound):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "the session has ended"))
	case err != nil:
		return r.storeUnavailable(c.Request.ID, err)
	}
	r.listenersChanged(ctx, c.Session.ID)
	return resultResponse(c.Request.ID, json.RawMessage(`{}`))
}

func resultResponse(id jsonrpc.ID, result json.RawMessage) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Result: result}
}

func errorResponse(id jsonrpc.ID, err *jsonrpc.Error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: err}
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
