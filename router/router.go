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
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Implementation is the gateway's own serverInfo/clientInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// Store is what the router uses of the shared store: session records and
// backend snapshots, the bus (list changes between instances), request
// counters (rate limits), the keys its tokens are signed with, and the
// backend sessions it keeps (backend_session_owner.go).
type Store interface {
	store.Sessions
	store.Bus
	store.RateLimits
	store.SigningKeys
	store.BackendSessions
}

// Options configure a Router.
type Options struct {
	Store      Store
	SessionTTL time.Duration
	// CursorSecret signs pagination cursors. When nil, a key is generated
	// once and kept in the store, shared by every instance.
	CursorSecret []byte
	Hooks        []hook.Hook
	Logger       *slog.Logger
	Info         Implementation
	// ReprobeInterval is the least time between two initialize attempts on
	// a backend whose snapshot records a failure (default 5s), so a down
	// backend does not add its connect time to every list request.
	ReprobeInterval time.Duration
	// DiscoveryMinTTL and DiscoveryMaxTTL bound how long an instance trusts
	// a backend's discovery (which generation it speaks, its capabilities)
	// for 2026-07-28 requests: the backend's ttlMs, within them (defaults
	// 30s and 10m; see discovery.go).
	DiscoveryMinTTL, DiscoveryMaxTTL time.Duration
	// RequestStateTTL is how long a multi-round-trip request's state is
	// good for: the client must retry within it (default 15m: a human may
	// be answering an elicitation).
	RequestStateTTL time.Duration
	// Observer, when set, learns the duration and outcome of every backend
	// exchange of a list or routed request (metrics); nil costs nothing.
	Observer Observer
	// TracerProvider, when set, traces every request and its backend
	// exchanges (observe.go); nil starts no span and costs nothing.
	TracerProvider trace.TracerProvider
	// ListensPerPrincipal bounds the subscriptions/listen streams one
	// principal holds open on this instance (default 8); ListenURIs the
	// resourceSubscriptions of one listen (default 100). See
	// client_bounds.go.
	ListensPerPrincipal, ListenURIs int
	// MaxPageItems bounds the items of one gateway list page, whatever
	// the number of backends (default 1000; package router/federation).
	MaxPageItems int
	// Tasks runs the tasks the gateway runs for backends with a tasks:
	// block (tasks_run.go); nil: those tools are plain calls.
	Tasks *taskrun.Runner
	// TaskLauncher, with Tasks, runs those tasks elsewhere than in the
	// request that creates them (tasks_launch.go): on Lambda, an asynchronous
	// invocation that calls RunTask. nil: they run in this process.
	TaskLauncher TaskLauncher
	// UserTokens gives user_oauth backends' requests the calling user's
	// own token (router/usertokens.Vault); nil: the gateway has none.
	UserTokens credentials.UserTokenSource
}

// DefaultMaxPageItems is Options.MaxPageItems's default (config
// max_page_items).
const DefaultMaxPageItems = 1000

// Router serves the MCP methods of every configured virtual host. It is
// the front of the package: the exported API, dispatch (methods.go) and
// admission. The work is done by its parts, each holding what it needs:
//
//   - link (backendLink): handshakes, discovery, snapshots, kept backend
//     sessions: what the gateway knows of, and does over, a backend
//     connection (backend_*.go, discovery.go);
//   - fed (federation): lists, through package router/federation (which
//     backends a page asks, in what waves, the merge, the next cursor's
//     positions), with the router's side of them: the list cache,
//     federated cursors' keys, tool search, the vhost checks
//     (list_fanout.go, tool_*.go, vhost_check.go, pattern_watch.go);
//   - calls (routedCalls): a routed call's access, hooks, relay, request
//     state, sign-in and parking (routed.go, param_headers.go,
//     sign_in.go, request_state.go, input_fulfil.go, parking*.go);
//   - tasks (gatewayTasks): the Tasks extension's methods and the tasks
//     the gateway runs (tasks*.go).
//
// What every part reads (options, logger, the routing table, the cleanup
// group, the tracer) is their shared base; the client side of a call is
// its Caller (caller*.go).
type Router struct {
	*base
	link  *backendLink
	fed   *federation
	calls *routedCalls
	tasks *gatewayTasks

	stopBus func() // set by Start

	listensDone chan struct{} // closed by EndListens
	listens     listenSlots   // open listens per principal
	endListens  func()
}

// base is what every part of the Router reads: its options, logger and
// routing table, the gateway's own implementation info, the tracer, and
// the cleanup group Close waits for.
type base struct {
	opts  Options
	log   *slog.Logger
	table atomic.Pointer[routingTable]

	infoOnce sync.Once
	infoJSON json.RawMessage

	// cleanup counts what must end before the backend clients close: the
	// background DELETEs of per-request backend sessions (release) and the
	// backend calls of gateway-run tasks (taskConversation), which unwind
	// a little after their runs end.
	cleanup sync.WaitGroup
	mu      sync.Mutex
	closed  bool

	tracer trace.Tracer // nil: tracing is off
}

// backendLink is the gateway's side of its backends: handshakes,
// discovery and snapshots, kept backend sessions.
type backendLink struct {
	*base
	// lastSweep is when this instance last swept the index of kept
	// backend sessions (UnixNano; backend_session_owner.go).
	lastSweep atomic.Int64
	// streams are the open streams of kept backend sessions that this
	// instance's listeners share (backend_session_stream.go).
	streams keptStreams
	// sessionIDs seal the backend session ids kept in the store, and
	// badIDLogged is set once one failed to open
	// (backend_session_ids.go).
	sessionIDs  *sealed.BackendSessions
	badIDLogged atomic.Bool
}

// federation is the list side: the router's half of package
// router/federation (the backends as a caller reaches them, the list
// cache, cursor keys), tool search and the vhost checks that list.
type federation struct {
	*base
	link       *backendLink
	cursorKeys *sealed.Key
	patterns   patternWatch // pattern_watch.go
}

// routedCalls is a routed call's way to its backend: access, hooks,
// relay, request state, sign-in, parking.
type routedCalls struct {
	*base
	link   *backendLink
	fed    *federation
	tasks  *gatewayTasks
	states *sealed.States
}

// gatewayTasks are the Tasks extension's methods and the tasks the
// gateway runs for backends.
type gatewayTasks struct {
	*base
	link      *backendLink
	fed       *federation
	calls     *routedCalls
	taskKeys  *sealed.Key  // seals task ids (tasks.go)
	taskWatch taskWatchers // listens waiting for gateway tasks' changes (tasks.go)
}

// New compiles the virtual hosts into a routing table. It does no I/O:
// Start does.
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
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "mcpgw", Version: "dev"}
	}
	if opts.DiscoveryMinTTL <= 0 {
		opts.DiscoveryMinTTL = 30 * time.Second
	}
	if opts.DiscoveryMaxTTL < opts.DiscoveryMinTTL {
		opts.DiscoveryMaxTTL = max(10*time.Minute, opts.DiscoveryMinTTL)
	}
	if opts.RequestStateTTL <= 0 {
		opts.RequestStateTTL = 15 * time.Minute
	}
	if opts.ListensPerPrincipal <= 0 {
		opts.ListensPerPrincipal = DefaultListensPerPrincipal
	}
	if opts.ListenURIs <= 0 {
		opts.ListenURIs = DefaultListenURIs
	}
	if opts.MaxPageItems <= 0 {
		opts.MaxPageItems = DefaultMaxPageItems
	}
	b := &base{opts: opts, log: opts.Logger}
	if opts.TracerProvider != nil {
		b.tracer = opts.TracerProvider.Tracer(tracerName)
	}
	link := &backendLink{base: b, sessionIDs: sealed.NewBackendSessions(sealed.NewKey(opts.Store, backendSessionKeyName,
		sealed.DerivedSecret(opts.CursorSecret, backendSessionKeyName)))}
	fed := &federation{base: b, link: link, cursorKeys: sealed.NewKey(opts.Store, cursorKeyName, opts.CursorSecret)}
	fed.patterns.ctx, fed.patterns.cancel = context.WithCancel(context.Background())
	calls := &routedCalls{base: b, link: link, fed: fed,
		states: sealed.NewStates(sealed.NewKey(opts.Store, stateKeyName, sealed.DerivedSecret(opts.CursorSecret, stateKeyName)),
			opts.RequestStateTTL)}
	tasks := &gatewayTasks{base: b, link: link, fed: fed, calls: calls,
		taskKeys: sealed.NewKey(opts.Store, taskKeyName, sealed.DerivedSecret(opts.CursorSecret, taskKeyName))}
	calls.tasks = tasks
	r := &Router{base: b, link: link, fed: fed, calls: calls, tasks: tasks,
		listens: listenSlots{limit: opts.ListensPerPrincipal}, listensDone: make(chan struct{})}
	r.endListens = sync.OnceFunc(func() { close(r.listensDone) })
	r.table.Store(buildRoutingTable(vhosts, nil, r.clientOptions()...))
	return r
}

// clientOptions are what every backend client is built with: where a
// stdio backend logs, the identity its processes are initialized with,
// and where user_oauth backends' tokens are kept.
func (b *base) clientOptions() []upstream.Option {
	return []upstream.Option{upstream.WithLogger(b.log), upstream.WithClientInfo(b.clientInfo()), upstream.WithUserTokens(b.opts.UserTokens)}
}

// Start subscribes to the store's bus, on which instances tell each other
// that a backend's lists changed (list_fanout.go: dropListCache). Until then the router
// serves requests, but its list caches only learn of their own instance's
// changes. An error (the store did not confirm within ctx) leaves the
// subscription coming up in the background.
func (r *Router) Start(ctx context.Context) error {
	stop, err := r.opts.Store.Subscribe(ctx, r.onBus)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		stop()
		return nil
	}
	r.stopBus = stop
	return err
}

// holdOpen keeps Close from closing the backend clients until the caller
// calls r.cleanup.Done; false once Close has begun.
func (b *base) holdOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.cleanup.Add(1)
	return true
}

// Close stops the bus subscription, waits for the background cleanup of
// backend sessions and for the backend calls of tasks still unwinding
// (close the task runner first: it ends their runs), and releases the
// pooled backend connections.
func (r *Router) Close() {
	r.mu.Lock()
	r.closed = true
	stop := r.stopBus
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.fed.patterns.cancel()
	r.cleanup.Wait()
	r.table.Load().close()
}

// onBus drops the cached list pages of a backend another instance saw
// announce list_changed, and wakes the listens of a task whose status
// changed. It runs on the store's bus goroutine.
func (r *Router) onBus(m store.BusMessage) {
	if owner, id, ok := taskrun.StatusChanged(m); ok {
		r.tasks.taskWatch.changed(owner, id)
		return
	}
	if m.Kind != store.BusListChanged {
		return
	}
	if vh, key, ok := strings.Cut(m.ID, "/"); ok {
		r.fed.dropListCache(vh, key)
	}
}

// HasVHost reports whether a virtual host is configured.
func (r *Router) HasVHost(name string) bool {
	_, ok := r.table.Load().vhosts[name]
	return ok
}

// VHostNames lists the configured virtual hosts, sorted: what a refusal
// of an unknown one tells the operator.
func (r *Router) VHostNames() []string {
	return slices.Sorted(maps.Keys(r.table.Load().vhosts))
}

// AccessScopes lists the scopes virtual host name's access rules ask for
// (step-up authorization), sorted; nil for none or an unknown vhost.
func (r *Router) AccessScopes(name string) []string {
	v, ok := r.table.Load().vhosts[name]
	if !ok {
		return nil
	}
	return v.access.Scopes()
}

// AllAccessScopes lists the scopes any vhost's access rules ask for,
// sorted: what the gateway's own authorization server grants.
func (r *Router) AllAccessScopes() []string {
	var out []string
	for _, v := range r.table.Load().vhosts {
		for _, sc := range v.access.Scopes() {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	slices.Sort(out)
	return out
}

// SessionTTL is the sliding lifetime of a session in the store.
func (r *Router) SessionTTL() time.Duration { return r.opts.SessionTTL }

// Call is one downstream JSON-RPC request, of either protocol generation.
// The generation is a property of the request's client (Caller), not of
// its type: the transport builds one Call and every request enters
// through Handle (after Admit, when its answer may begin as a stream).
type Call struct {
	// VHost and Principal are whom the request is for and from. Handle
	// takes them from the caller's session when they are empty.
	VHost     string
	Principal string
	// Claims are the claims of the token the request came with (nil:
	// none, as in auth mode none), for the vhost's access rules. They are
	// the request's own, never stored with the session: a 2025 session's
	// later requests are judged by the token each one carries.
	Claims map[string]any
	// Header is the downstream request's headers, for passthrough_headers.
	Header  http.Header
	Request *jsonrpc.Request
	// Stream carries messages to the client while the call runs (the
	// POST's SSE stream): progress, log messages, server-to-client
	// requests, a listen's notifications. nil when the client accepts no
	// event stream.
	Stream Stream

	// Page, when set, is the buffer a list page is built in, lent by a
	// front that knows when the answer has been written (LendPageBuffer);
	// nil: a page gets memory of its own.
	Page *PageBuffer
	// Caller is the call's client side (caller.go): a 2025 session's
	// (SessionCaller), a 2026-07-28 request's (ModernClient), or a
	// gateway-run task's run. It decides how the client is served, asked
	// and given results; Admit alone needs none.
	Caller Caller
	// Audit, when set, is the audit trail's note of the request, which
	// the router fills in as it decides (observe.go); nil when the trail
	// is off, and for a run detached from its request.
	Audit *AuditNote

	// d and peer are set by Serve, once, on entry, and nothing below it
	// writes them: Serve decides a backend's own tool name on a copy of
	// the call (decideRawTool), and a backend re-probed after a sign-in
	// goes on with a copy (signInFirst). d is what Admit decided of the
	// request (admission.go). peer is the request's client as the backend
	// link sees it (backend_session.go): its session's, or a 2026-07-28
	// request's _meta and the discovery cache's snapshots; nil for a
	// method no backend is asked (methodRow.backends), where making one
	// would cost a discovery for nothing. A task's run is given its
	// peer when it is made (taskCall).
	d    *Decisions
	peer *peer
}

// Session is the 2025 session the call belongs to (nil: none holds its
// client), for a session runtime asking the client on its behalf.
func (c *Call) Session() *store.Session {
	if c.Caller == nil {
		return nil
	}
	return c.Caller.facts().session
}

// normalize fills VHost and Principal from a 2025-era request's session.
func (c *Call) normalize() {
	if sess := c.Session(); sess != nil {
		if c.VHost == "" {
			c.VHost = sess.VHost
		}
		if c.Principal == "" {
			c.Principal = sess.Principal
		}
	}
}

// SessionRuntime is what a call of a 2025-era session needs beyond the
// federation core. handler/session implements it.
type SessionRuntime interface {
	// AskClient sends a backend's request (sampling, elicitation, roots)
	// to the client on the call's stream and returns the client's answer,
	// which may arrive on any instance.
	AskClient(ctx context.Context, c *Call, req *jsonrpc.Request) *jsonrpc.Response
	// ListenersChanged says the session's subscriptions or log level
	// changed: whoever holds its GET stream rebuilds its listeners.
	ListenersChanged(ctx context.Context, sessionID store.SessionID)
}

// ErrCancelledByClient is the cause with which a session runtime cancels a
// call's context when the client cancels the call: the call is then
// answered -32800, only to close the HTTP exchange.
var ErrCancelledByClient = errors.New("cancelled by the client")

// cancelledResponse answers a call the client cancelled. The client has
// stopped waiting; the answer only closes the HTTP exchange.
func cancelledResponse(id jsonrpc.ID) *jsonrpc.Response {
	return errorResponse(id, rpcError(CodeRequestCancelled, "request cancelled by the client"))
}

// Stream sends messages to the client during one call.
type Stream interface {
	// Send writes one message; it fails once the client has gone.
	Send(msg jsonrpc.Message) error
}

// Handle answers one request, of either generation: Admit, then Serve.
// It never returns nil for a call; for a notification it returns nil.
func (r *Router) Handle(ctx context.Context, c *Call) *jsonrpc.Response {
	d, refusal := r.Admit(ctx, c)
	if refusal != nil {
		return refusal
	}
	return r.Serve(ctx, c, d)
}

// Serve answers one request, of either generation, with the decisions
// Admit made of it (nil: Admit is asked here). It never returns nil for a
// call; for a notification it returns nil.
func (r *Router) Serve(ctx context.Context, c *Call, d *Decisions) (resp *jsonrpc.Response) {
	c.normalize()
	if r.tracer != nil && c.Request.IsCall() {
		var span trace.Span
		ctx, span = r.startRequest(ctx, c.VHost, c.Caller.facts().protocolVersion, c.Header, c.Request)
		noteTrace(c, span)
		defer func() { endRequest(span, resp) }()
	}
	if d == nil {
		var refusal *jsonrpc.Response
		if d, refusal = r.Admit(ctx, c); refusal != nil {
			return refusal // a Failure: its status is its own, in either generation
		}
	}
	if d == nil {
		return errorResponse(c.Request.ID, rpcError(CodeInvalidRequest, "virtual host %s is no longer configured", wire.Quote(c.VHost)))
	}
	c.d = d
	row := rowOf(c.Request.Method)
	if row.backends() {
		c.peer = c.Caller.peer(ctx, r.link, d.v, c) // caller_*.go
	}
	if row.Tool && d.rerr != nil && c.Request.IsCall() {
		// A name no backend publishes may be a backend's own (an MCP
		// App's): decided here, once, now that the peer can tell; the
		// call goes on as the published name's (raw_tool_names.go).
		var refusal *jsonrpc.Response
		if c, refusal = r.calls.decideRawTool(ctx, d.v, c); refusal != nil {
			return refusal
		}
	}
	return c.Caller.serve(ctx, r, d.v, c) // caller_session.go, caller_modern.go
}

// serve is the core both generations share: methods the gateway answers
// itself, list fan-out, routed methods. A 2026-07-28 request reaches it
// through handleModern.
func (r *Router) serve(ctx context.Context, v *vhost, c *Call) (resp *jsonrpc.Response) {
	if !c.Request.IsCall() {
		return nil // notifications/initialized and friends need no answer
	}
	row := rowOf(c.Request.Method)
	switch {
	case row.serving == byGateway && row.Session:
		return row.answer(r, ctx, v, c)
	case row.serving == taskMethod:
		return r.tasks.routeTask(ctx, v, c) // a 2025 session that declared Tasks in its initialize
	case row.serving != fanOut && row.serving != routed:
		return errorResponse(c.Request.ID, rpcError(CodeMethodNotFound, "method %s is not supported", wire.Quote(c.Request.Method)))
	}
	if ctx.Err() != nil { // cancelled before it arrived here (a cancel mark)
		return cancelledResponse(c.Request.ID)
	}
	switch {
	case row.serving == fanOut:
		resp = r.fed.list(ctx, v, c, row.list)
	default:
		resp = r.calls.routed(ctx, v, c)
	}
	if errors.Is(context.Cause(ctx), ErrCancelledByClient) {
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
	if !wire.ValidLogLevel(p.Level) {
		return errorResponse(c.Request.ID, invalidParams("unknown log level %s", wire.Quote(p.Level)))
	}
	sess := c.Session()
	if sess == nil { // the transport sends it only for a session (wire.Method.Session)
		return errorResponse(c.Request.ID, rpcError(CodeMethodNotFound, "logging/setLevel needs a session"))
	}
	switch err := r.opts.Store.SetLogLevel(ctx, sess.ID, p.Level, r.opts.SessionTTL); {
	case errors.Is(err, store.ErrNotFound):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "the session has ended"))
	case err != nil:
		return r.storeUnavailable(c.Request.ID, err)
	}
	c.Caller.listenersChanged(ctx, sess.ID)
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
