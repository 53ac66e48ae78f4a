// Package demobackend is a small but feature-complete MCP server used as a
// stand-in for real backends: `gateway --demo` runs two of them in process,
// docker-compose runs them as a binary, and the gateway's tests drive them
// through testsupport. It deliberately exercises every MCP feature the
// gateway has to route or merge (tools, resources, resource templates,
// prompts, completions, subscriptions, logging, instructions, pagination),
// so a gateway bug shows up against it rather than against a customer's
// server.
package demobackend

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/wire"
)

// Version is reported as serverInfo.version; it only needs to be stable so
// that tests comparing serverInfo do not churn.
const Version = "v0.1.0"

// Options tune a demo server. The zero value gives the full feature set
// with the SDK's default page size.
type Options struct {
	// PageSize caps list results per page so that the gateway's cursor
	// handling can be exercised with a handful of items; 0 means the SDK
	// default.
	PageSize int
	// Instructions overrides the default instructions text, so that tests
	// can tell merged instructions of several backends apart.
	Instructions string
	// NoPrompts and NoResources build a server without those features (and
	// hence without the matching capabilities), which is what the gateway's
	// capability merge has to cope with.
	NoPrompts, NoResources bool
	// Stateless is only read by [Start]: it selects the stateless Streamable
	// HTTP mode, in which the backend keeps no Mcp-Session-Id.
	Stateless bool
	// Latency, only read by [Start], holds every POST that long before it
	// is served: a backend that is far away or does I/O, whose time is not
	// spent on the machine's cores (make bench's list-fanout-modern-remote).
	Latency time.Duration
	// InitDelay, only read by [Start], holds every initialize that long
	// before it is served, as FastMCP answers initialize after about a
	// second (make bench's call-slow-init).
	InitDelay time.Duration
	// Logger receives the SDK's own activity log; nil discards it.
	Logger *slog.Logger
	// PrivateFirstListPage marks the first page of every list (a request
	// without a cursor) cacheScope private for 2026-07-28 clients, and
	// later pages public: a backend whose answers depend on the caller in
	// part, for the rule that one walk has one scope.
	PrivateFirstListPage bool
	// ExtraTools adds that many tools of realistic size (names,
	// descriptions, input schemas) beside the demo's own, for benchmarks
	// of large lists (make bench's list-scale scenarios).
	ExtraTools int
}

// state is the per-server mutable state. It lives per *mcp.Server rather
// than per session because the gateway is stateless and may open a fresh
// backend session for every request: a per-session counter would always
// read 1 and hide routing mistakes.
type state struct {
	mu            sync.Mutex
	counter       int
	calls         int
	subscriptions map[string]int // uri -> number of active subscriptions
}

func (s *state) subscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscriptions[uri]++
}

func (s *state) unsubscribe(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subscriptions[uri] <= 1 {
		delete(s.subscriptions, uri)
		return
	}
	s.subscriptions[uri]--
}

func (s *state) subscribedURIs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	uris := make([]string, 0, len(s.subscriptions))
	for uri := range s.subscriptions {
		uris = append(uris, uri)
	}
	sort.Strings(uris)
	return uris
}

// DefaultInstructions is the instructions text of a demo server named name
// when [Options.Instructions] is empty.
func DefaultInstructions(name string) string {
	return "Demo backend " + name + ": a counter and an echo tool."
}

// NewServer builds a demo MCP server named name. Each call has its own
// counter, so two backends in one process stay distinguishable.
func NewServer(name string, opts Options) *mcp.Server {
	st := &state{subscriptions: make(map[string]int)}
	instructions := opts.Instructions
	if instructions == "" {
		instructions = DefaultInstructions(name)
	}
	sopts := &mcp.ServerOptions{
		Instructions: instructions,
		PageSize:     opts.PageSize,
		Logger:       opts.Logger,
	}
	if opts.PrivateFirstListPage {
		sopts.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if firstListPage(req) {
				c.CacheScope = "private"
			}
		}
	}
	if !opts.NoPrompts || !opts.NoResources {
		// Completions only make sense for prompts and templates; without
		// both, advertising the capability would be a lie.
		sopts.CompletionHandler = completionHandler(!opts.NoPrompts, !opts.NoResources)
	}
	if !opts.NoResources {
		sopts.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
			st.subscribe(req.Params.URI)
			return nil
		}
		sopts.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			st.unsubscribe(req.Params.URI)
			return nil
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: Version}, sopts)
	srv.AddReceivingMiddleware(countToolCalls(st))

	addTools(srv, st)
	addExtraTools(srv, opts.ExtraTools)
	if !opts.NoResources {
		addResources(srv, st)
	}
	if !opts.NoPrompts {
		addPrompts(srv)
	}
	return srv
}

// countToolCalls counts every tools/call, including tools added to the
// server after NewServer (such as testsupport's extra tools), so get_stats
// reflects all traffic the gateway routed here.
func countToolCalls(st *state) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if wire.MethodOf(method).Tool {
				st.mu.Lock()
				st.calls++
				st.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	}
}

// firstListPage reports whether req is a list request without a cursor.
func firstListPage(req mcp.Request) bool {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		return p.Cursor == ""
	case *mcp.ListPromptsParams:
		return p.Cursor == ""
	case *mcp.ListResourcesParams:
		return p.Cursor == ""
	case *mcp.ListResourceTemplatesParams:
		return p.Cursor == ""
	}
	return false
}
