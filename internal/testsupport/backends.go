package testsupport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/demobackend"
	"github.com/mcpgw/gateway/internal/testsupport/skillserver"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BackendOptions shape a test backend. The zero value is a stateful
// Streamable HTTP demo backend named "backend" with every feature.
type BackendOptions struct {
	// Name is the server name; it also appears in the default instructions.
	Name string
	// PageSize caps list pages (0: SDK default) for pagination tests.
	PageSize int
	// PrivateFirstListPage: the first page of each list is cacheScope
	// private, later ones public (demobackend.Options).
	PrivateFirstListPage bool
	// ExtraTools adds tools named t00, t01, ... (each returns its own name)
	// so that a tool list spans several pages.
	ExtraTools int
	// RealisticTools adds the demo backend's tools of realistic names,
	// descriptions and schemas (search_issues, archive_invoices, …;
	// demobackend.Options.ExtraTools), for tool search.
	RealisticTools int
	// Stateless serves Streamable HTTP without Mcp-Session-Id.
	Stateless bool
	// JSONResponse answers POSTs with application/json instead of SSE.
	JSONResponse bool
	// LegacySSE serves the 2024-11-05 HTTP+SSE transport instead of
	// Streamable HTTP; Stateless and JSONResponse are then ignored.
	LegacySSE bool
	// NoPrompts and NoResources leave those features (and capabilities)
	// out, so the gateway's capability merge sees heterogeneous backends.
	NoPrompts, NoResources bool
	// Instructions replaces the demo's default instructions.
	Instructions string
	// StreamingTools adds the tools that exercise traffic beyond plain
	// request/response: progress, sampling, elicitation, roots, and a tool
	// that blocks until cancelled (see streaming_tools.go).
	StreamingTools bool
	// ModernTools adds protocol 2026-07-28's test tools (multi-round-trip
	// requests, a tool-list change; see mrtr_tools.go). They need
	// Stateless: only a stateless backend speaks 2026-07-28.
	ModernTools bool
	// AskingTools adds a session backend's tools that ask the client
	// several things in one call: in turn, at once, and one that holds on
	// when its request fails (see asking_tools.go).
	AskingTools bool
	// TokenVerifier, when set, puts the go-sdk's bearer-token middleware
	// in front of the MCP handler (a request without a token it accepts is
	// answered 401 and never reaches the server) and adds the tool
	// "whoami", which answers the UserID of the token its request carried.
	TokenVerifier auth.TokenVerifier
	// Skills, when set, makes the backend a skills server instead of the
	// demo (package skillserver): this tree's skills under the Skills
	// extension, and nothing else.
	Skills fs.FS
	// SessionCounter adds the tool "count", which counts its calls per
	// backend session and names the session (session_tools.go).
	SessionCounter bool
	// DelayInitialize holds every initialize that long before the server
	// sees it (FastMCP answers initialize after about a second);
	// DelayDiscovery holds every server/discover and initialize: a backend
	// slow in each discovery answer.
	DelayInitialize, DelayDiscovery time.Duration
}

// Backend is a real go-sdk MCP server on an httptest server, with a
// recording and fault-injecting middleware in front. Tests assert on what
// the gateway actually sent upstream (methods, headers, DELETEs) and make
// the upstream fail on cue, which a mock would not prove.
type Backend struct {
	// URL is the MCP endpoint: /mcp for Streamable HTTP, /sse for LegacySSE.
	URL string
	// Server is the MCP server behind the endpoint, for tests that change
	// features at run time or send notifications.
	Server *mcp.Server

	// Started and Cancelled receive the name of the "block" tool's call
	// argument when it starts and when it observes cancellation (only with
	// StreamingTools).
	Started, Cancelled chan string
	// AskFailed receives the error of the "hold" tool's failed request
	// (only with AskingTools).
	AskFailed chan string

	srv       *httptest.Server
	cancel    context.CancelFunc
	base      context.Context // ends at Close
	closeOnce sync.Once

	mu       sync.Mutex
	counts   map[string]int
	headers  map[string]http.Header
	failures map[string]int // method -> POSTs left to fail; -1: until cleared
	down     bool
	deletes  int
	rounds   map[string]int // modern tools' rounds served, by name or URI
	counters map[string]int // the count tool's calls, by backend session
	deleted  []string       // the session ids DELETE named, in order
	opts     BackendOptions
	changed  chan struct{} // closed and replaced whenever a request or round is recorded
}

// StartBackend starts a backend that is closed when the test ends.
func StartBackend(t testing.TB, opts BackendOptions) *Backend {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = "backend"
	}
	srv := demobackend.NewServer(name, demobackend.Options{
		PrivateFirstListPage: opts.PrivateFirstListPage,
		PageSize:             opts.PageSize,
		Instructions:         opts.Instructions,
		NoPrompts:            opts.NoPrompts,
		NoResources:          opts.NoResources,
		ExtraTools:           opts.RealisticTools,
	})
	b := &Backend{Server: srv, rounds: map[string]int{}, counters: map[string]int{}, opts: opts}
	if opts.SessionCounter {
		addSessionCounter(srv, b)
	}
	if opts.StreamingTools {
		b.Cancelled = make(chan string, 16)
		b.Started = make(chan string, 16)
		addStreamingTools(srv, b)
	}
	if opts.AskingTools {
		if b.Cancelled == nil {
			b.Cancelled = make(chan string, 16)
		}
		b.AskFailed = make(chan string, 16)
		addAskingTools(srv, b)
	}
	if opts.ModernTools {
		addModernTools(srv, b, !opts.NoResources, !opts.NoPrompts)
	}
	for i := range opts.ExtraTools {
		addExtraTool(srv, fmt.Sprintf("t%02d", i))
	}

	if opts.TokenVerifier != nil {
		addWhoami(srv)
	}
	getServer := func(*http.Request) *mcp.Server { return srv }
	path := demobackend.Path
	var h http.Handler
	if opts.Skills != nil {
		cat, err := skillserver.Load(opts.Skills)
		if err != nil {
			t.Fatal(err)
		}
		h, b.Server = skillserver.Handler(name, cat, skillserver.Options{PageSize: opts.PageSize, Stateful: !opts.Stateless})
	} else if opts.LegacySSE {
		path = "/sse"
		h = mcp.NewSSEHandler(getServer, nil)
	} else {
		h = mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:    opts.Stateless,
			JSONResponse: opts.JSONResponse,
		})
	}

	b.counts = make(map[string]int)
	b.headers = make(map[string]http.Header)
	b.failures = make(map[string]int)
	b.changed = make(chan struct{})
	mux := http.NewServeMux()
	if opts.TokenVerifier != nil {
		h = auth.RequireBearerToken(opts.TokenVerifier, nil)(h)
	}
	mux.Handle(path, b.middleware(h))

	// Request contexts derive from baseCtx so that Close can end hanging
	// SSE GETs, which httptest.Server.Close would otherwise wait for.
	baseCtx, cancel := context.WithCancel(context.Background())
	b.cancel, b.base = cancel, baseCtx
	b.srv = httptest.NewUnstartedServer(mux)
	b.srv.Config.BaseContext = func(net.Listener) context.Context { return baseCtx }
	b.srv.Start()
	b.URL = b.srv.URL + path
	t.Cleanup(b.Close)
	return b
}

// addWhoami adds the tool that names the subject of the request's bearer
// token, as the go-sdk's auth middleware verified it.
func addWhoami(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Names the subject of the bearer token this request carried."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			who := "nobody"
			if ti := req.Extra.TokenInfo; ti != nil {
				who = ti.UserID
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: who}}}, nil, nil
		})
}

func addExtraTool(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Extra tool " + name + " for pagination tests."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
		})
}

// Close stops the backend and ends its MCP sessions; it is idempotent.
// Tests may call it early to simulate a backend that went away for good
// (connections are then refused rather than answered with 503).
func (b *Backend) Close() {
	b.closeOnce.Do(func() {
		b.cancel()
		b.srv.Close()
		// Stateful sessions outlive their requests; without this their
		// goroutines would leak into the next test.
		for ss := range b.Server.Sessions() {
			ss.Close()
		}
	})
}

// Count reports how many POSTs carrying a JSON-RPC message with this
// method reached the backend, including those answered with an injected
// failure, so retry behaviour is visible.
func (b *Backend) Count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts[method]
}

// WaitCount waits until Count(method) reaches n, or timeout passes; it
// reports whether it did. It wakes on every recorded request (no polling),
// so a test can wait for the gateway to have done something upstream.
// Count("GET") counts standalone notification streams asked for, when the
// request arrives: before the SDK attaches the stream, so a notification
// sent right after may be lost; StreamAccepted counts those attached.
func (b *Backend) WaitCount(method string, n int, timeout time.Duration) bool {
	return waitChanged(&b.mu, timeout, func() (bool, <-chan struct{}) { return b.counts[method] >= n, b.changed })
}

// bump counts one more key and wakes WaitCount.
func (b *Backend) bump(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[key]++
	b.notifyLocked()
}

func (b *Backend) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// LastHeaders returns a copy of the headers of the last POST with this
// method, or nil if there was none; it is how header passthrough, removal
// and injection are checked.
func (b *Backend) LastHeaders(method string) http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.headers[method].Clone()
}

// Deletes reports how many DELETEs (session terminations) reached the
// backend.
func (b *Backend) Deletes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deletes
}

// ResetCounts forgets recorded counts, headers, rounds and DELETEs, so a
// test can ignore the traffic of its own setup.
func (b *Backend) ResetCounts() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.counts)
	clear(b.headers)
	clear(b.rounds)
	b.deletes = 0
	b.deleted = nil
}

// FailMethod makes the next n POSTs of method answer HTTP 503; n = -1
// keeps failing until ClearFailures, and n = 0 clears this method.
func (b *Backend) FailMethod(method string, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n == 0 {
		delete(b.failures, method)
		return
	}
	b.failures[method] = n
}

// ClearFailures cancels every FailMethod.
func (b *Backend) ClearFailures() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.failures)
}

// SetDown makes every request (any HTTP method) answer 503 while down is
// true: a backend that is reachable but unhealthy.
func (b *Backend) SetDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

// middleware records and possibly fails a request before the SDK sees it.
func (b *Backend) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := false
		switch r.Method {
		case http.MethodPost:
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				http.Error(w, "testsupport: reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			methods := jsonrpcMethods(body)
			b.delay(r, methods)
			fail = b.recordPost(methods, r.Header)
			if slices.Contains(methods, "subscriptions/listen") {
				w = &ackWatcher{ResponseWriter: w, onAck: func() { b.bump(ListenAcknowledged) }}
			}
		case http.MethodDelete:
			b.mu.Lock()
			b.deletes++
			b.deleted = append(b.deleted, r.Header.Get("Mcp-Session-Id"))
			fail = b.down
			b.notifyLocked()
			b.mu.Unlock()
		default:
			b.mu.Lock()
			b.counts[r.Method]++ // "GET": standalone notification streams
			fail = b.down
			b.notifyLocked()
			b.mu.Unlock()
			if r.Method == http.MethodGet {
				w = &statusWatcher{ResponseWriter: w, onStatus: func(code int) { b.bump(streamStatus(code)) }}
			}
		}
		if fail {
			http.Error(w, "testsupport: injected failure", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ListenAcknowledged is what Count and WaitCount call the
// acknowledgements of subscriptions/listen a backend has sent: it sends
// one once it has registered the listen's subscriptions, so a change made
// after WaitCount returns reaches that listen.
const ListenAcknowledged = "notifications/subscriptions/acknowledged"

// StreamAccepted is what Count and WaitCount call the standalone streams
// a backend has attached: the go-sdk sends their 200 once a notification
// it sends would reach them. StreamRefused counts those answered 409 (the
// session's stream is held by another GET).
var (
	StreamAccepted = streamStatus(http.StatusOK)
	StreamRefused  = streamStatus(http.StatusConflict)
)

func streamStatus(code int) string { return "GET " + strconv.Itoa(code) }

// statusWatcher reports the status a GET is answered with.
type statusWatcher struct {
	http.ResponseWriter
	onStatus func(int)
}

func (w *statusWatcher) WriteHeader(code int) {
	w.onStatus(code)
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets the SDK flush through the watcher.
func (w *statusWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ackWatcher counts the acknowledgement on a listen's stream once written
// (the go-sdk writes each event in one Write, and flushes it).
type ackWatcher struct {
	http.ResponseWriter
	onAck func()
	seen  bool
}

func (w *ackWatcher) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if !w.seen && bytes.Contains(p, []byte(`"`+ListenAcknowledged+`"`)) {
		w.seen = true
		w.onAck()
	}
	return n, err
}

// Unwrap lets the SDK flush through the watcher.
func (w *ackWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recordPost counts the methods of one POST and reports whether it must
// fail. A pending failure is consumed only by a POST that it fails.
func (b *Backend) recordPost(methods []string, h http.Header) (fail bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range methods {
		b.counts[m]++
		b.headers[m] = h.Clone()
	}
	b.notifyLocked()
	if b.down {
		return true
	}
	for _, m := range methods {
		switch n := b.failures[m]; {
		case n < 0:
			return true
		case n > 0:
			if n == 1 {
				delete(b.failures, m)
			} else {
				b.failures[m] = n - 1
			}
			return true
		}
	}
	return false
}

// jsonrpcMethods extracts the method names of a POST body. Bodies are
// single messages in practice, but a batch is handled too so that a
// gateway sending one is still counted. Responses (no method) are skipped.
func jsonrpcMethods(body []byte) []string {
	type msg struct {
		Method string `json:"method"`
	}
	var msgs []msg
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		_ = json.Unmarshal(trimmed, &msgs)
	} else {
		var m msg
		if json.Unmarshal(body, &m) == nil {
			msgs = append(msgs, m)
		}
	}
	var methods []string
	for _, m := range msgs {
		if m.Method != "" {
			methods = append(methods, m.Method)
		}
	}
	return methods
}
