// Package tasksbackend is an MCP server of revision 2026-07-28 that
// implements the Tasks extension (SEP-2663, io.modelcontextprotocol/tasks):
// the backend the gateway's task pass-through is tested against, since no
// SDK we use implements the extension yet.
//
// It is written on the wire, without an SDK, so that every field the
// extension defines is under the test's control:
//
//   - server/discover advertises capabilities.extensions
//     ["io.modelcontextprotocol/tasks"]; tools/list marks each tool's
//     execution.taskSupport (forbidden, optional, required);
//   - tools/call of a task-supporting tool from a client that declared the
//     extension in _meta.io.modelcontextprotocol/clientCapabilities returns
//     a flat CreateTaskResult (resultType "task", taskId, status,
//     createdAt, lastUpdatedAt, ttlMs, pollIntervalMs) once the task is
//     stored, and runs the tool in the background; without the extension
//     an optional tool runs synchronously and a required one gets -32021
//     with data.requiredCapabilities;
//   - tasks/get returns the DetailedTask (inputRequests while
//     input_required, result once completed, error once failed);
//     tasks/update delivers inputResponses (a partial set is held until the
//     round is complete; unknown keys are ignored); tasks/cancel cancels the
//     run's context, which settles the task cancelled; every tasks/* method
//     needs the extension (-32021) and an Mcp-Name header equal to
//     params.taskId (-32020); an unknown task id is -32602; tasks/result
//     and tasks/list (removed in v2) are -32601;
//   - subscriptions/listen with notifications.taskIds streams
//     notifications/tasks (a full DetailedTask) on each status change;
//   - Mcp-Method must match the body's method, Mcp-Name the body's name,
//     uri or taskId (-32020, HTTP 400).
//
// Its tools are every fixture the conformance suite's tasks-* scenarios
// name (@modelcontextprotocol/conformance 0.2.0-alpha.12): greet,
// slow_compute, failing_job, protocol_error_job, confirm_delete,
// multi_input and test_tool_with_task (see tools.go).
//
// Tasks live in the process (a map); the server is one instance, as a
// backend of the gateway's tests is.
package tasksbackend

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/localserve"
)

// ProtocolVersion is the only revision the server speaks.
const ProtocolVersion = "2026-07-28"

// ExtensionID names the Tasks extension in capabilities.
const ExtensionID = "io.modelcontextprotocol/tasks"

// Path is the endpoint Start returns; the handler serves every path.
const Path = "/mcp"

// Options shape a server. The zero value is the conformance fixture.
type Options struct {
	// TTL is every task's ttlMs, counted from its creation; a task is
	// forgotten once it has passed (default DefaultTTL).
	TTL time.Duration
	// PollInterval is every task's pollIntervalMs (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// FailDelay is how long failing_job and protocol_error_job run before
	// they fail (default DefaultFailDelay, the "~1s" the suite describes).
	FailDelay time.Duration
	// MaxTasks bounds the tasks the server holds; past it a task-creating
	// call gets -32603 (default DefaultMaxTasks).
	MaxTasks int
	// Logger receives refusals and task transitions (nil: discarded).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultTTL          = 5 * time.Minute
	DefaultPollInterval = 200 * time.Millisecond
	DefaultFailDelay    = time.Second
	DefaultMaxTasks     = 1000
)

// Server is one tasks fixture server. Its tasks and listeners live here.
type Server struct {
	opts   Options
	logger *slog.Logger

	mu        sync.Mutex
	tasks     map[string]*task
	listeners map[*listener]struct{}
	// runs counts the task goroutines, so Close waits for them.
	runs sync.WaitGroup
	// base ends every task's run on Close.
	base   context.Context
	cancel context.CancelFunc
}

// New builds a server; call Close to stop the runs it starts.
func New(opts Options) *Server {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.FailDelay <= 0 {
		opts.FailDelay = DefaultFailDelay
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, logger: logger, tasks: map[string]*task{},
		listeners: map[*listener]struct{}{}, base: base, cancel: cancel}
}

// Handler is the HTTP endpoint (every path).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Close cancels every running task and waits for their runs to end.
func (s *Server) Close() {
	s.cancel()
	s.runs.Wait()
}

// Start serves a new server on addr ("127.0.0.1:0" picks a free port) and
// returns the URL of its endpoint and the server. It stops when stop is
// called or ctx is done; stop waits for every goroutine Start created and
// may be called more than once.
func Start(ctx context.Context, addr string, opts Options) (url string, srv *Server, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, nil, err
	}
	s := New(opts)
	url, stop = localserve.Serve(ctx, ln, s.Handler(), localserve.Options{
		Path:      Path,
		AfterStop: s.Close,
		OnServeError: func(err error) {
			s.logger.Error("tasks backend stopped serving", "err", err)
		},
	})
	return url, s, stop, nil
}
