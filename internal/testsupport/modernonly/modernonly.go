// Package modernonly is an MCP server that speaks revision 2026-07-28 and
// nothing older: the conformance suite's "everything" fixture (the tools,
// resources and prompts that both requirement sets call, with the names and
// behaviour of go-sdk's conformance/everything-server) behind a front that
// refuses the session protocol.
//
// It is the backend of the translation runs: a 2025-11-25 client reaching it
// through the gateway proves that the gateway translates, because the server
// itself never answers initialize, never holds a session, never serves a GET
// stream and never sends a request to its client. A go-sdk server with
// SupportedProtocolVersions ["2026-07-28"] is not enough for that: it still
// answers initialize and serves legacy calls on ephemeral sessions.
//
// What it serves:
//   - POST requests of revision 2026-07-28 (MCP-Protocol-Version and
//     params._meta), statelessly, by go-sdk (Stateless: true), which also
//     answers their errors: -32602 for missing _meta, -32020 for header
//     mismatches, -32022 for other versions, 404 -32601 for removed methods;
//   - subscriptions/listen, with resource subscriptions (test://watched-resource
//     changes every WatchInterval) and tool and prompt list changes;
//   - logs on a request's stream only when its _meta carries a logLevel;
//   - every tool that needs the client (sampling, elicitation, roots) asks
//     with an input_required result and completes when called again with
//     inputResponses (MRTR), never with a server-to-client request.
//
// What it refuses (see [RefuseLegacy]): a POST that is not a 2026-07-28
// request (initialize, any call without MCP-Protocol-Version >= 2026-07-28
// and modern _meta, notifications, responses, batches) gets HTTP 400 with
// JSON-RPC -32022 and {"supported":["2026-07-28"],"requested":...}; any
// other HTTP method, GET and DELETE included, gets 405 with Allow: POST.
package modernonly

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/localserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the only revision the server speaks.
const ProtocolVersion = "2026-07-28"

// Path is the endpoint [Start] returns; the handler serves every path, as
// the go-sdk everything-server does.
const Path = "/mcp"

// WatchedURI is the resource that changes on its own, every
// [Options.WatchInterval], for resource subscriptions.
const WatchedURI = "test://watched-resource"

// DefaultWatchInterval is how often the watched resource changes in the
// command (the go-sdk everything-server's period).
const DefaultWatchInterval = 3 * time.Second

// Options shape a server. The zero value is the conformance fixture with a
// resource that changes only when [Server.TouchWatched] is called.
type Options struct {
	// Logger receives the front's refusals (warnings) and go-sdk's server
	// log (nil: discarded).
	Logger *slog.Logger
}

// Server is one modern-only fixture server. Its state (the watched
// resource's revision and the go-sdk server's feature lists, which the
// trigger tools change) lives here, not in globals.
type Server struct {
	mcp     *mcp.Server
	handler http.Handler
	// watched counts the changes of WatchedURI; its content names it.
	watched atomic.Int64
}

// New builds a server: go-sdk's stateless Streamable HTTP handler, behind
// [RefuseLegacy].
func New(opts Options) *Server {
	s := &Server{}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "mcpgw-modern-everything", Version: "1.0.0"}, &mcp.ServerOptions{
		Logger:                    logger,
		CompletionHandler:         complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{ProtocolVersion},
	})
	s.addTools()
	s.addResources()
	s.addPrompts()
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		Logger:    logger,
		// Closing a response stream is how a 2026-07-28 client cancels.
		PropagateRequestCancellation: true,
	})
	s.handler = RefuseLegacy(sdk, logger)
	return s
}

// Handler is the HTTP endpoint (every path).
func (s *Server) Handler() http.Handler { return s.handler }

// MCP is the go-sdk server behind the front, for tests that change its
// features at run time.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// TouchWatched changes WatchedURI and notifies the listen streams that
// subscribed to it.
func (s *Server) TouchWatched(ctx context.Context) {
	s.watched.Add(1)
	// ResourceUpdated only fans out; its error is always nil in v1.8.0.
	_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: WatchedURI})
}

// Watch calls TouchWatched every interval until ctx is done.
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.TouchWatched(ctx)
		}
	}
}

// subscribe accepts a subscription to any resource the server has; go-sdk
// records it (for listen streams, from resourceSubscriptions) and
// ResourceUpdated notifies it.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if !isResource(req.Params.URI) {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	return nil
}

// Start serves a new server on addr ("127.0.0.1:0" picks a free port) and
// returns the URL of its endpoint. With watch > 0 the watched resource
// changes every watch. The server stops when stop is called or ctx is
// done; stop waits for every goroutine Start created and may be called more
// than once.
func Start(ctx context.Context, addr string, watch time.Duration, opts Options) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	s := New(opts)
	so := localserve.Options{Path: Path, OnServeError: func(err error) {
		if opts.Logger != nil {
			opts.Logger.Error("modern-everything stopped serving", "err", err)
		}
	}}
	if watch > 0 {
		so.Run = func(base context.Context) { s.Watch(base, watch) }
	}
	url, stop = localserve.Serve(ctx, ln, s.Handler(), so)
	return url, stop, nil
}
