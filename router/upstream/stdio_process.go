package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateAfter is how long a stopping process has to exit once its stdin
// is closed before it gets SIGTERM, and then again before SIGKILL (the
// go-sdk's CommandTransport escalation; the MCP stdio shutdown sequence).
const terminateAfter = 2 * time.Second

// errProcessExited is the cause of a call whose process ended before the
// answer; its message says how it ended.
var errProcessExited = errors.New("process exited")

// relayedCapabilities are what the gateway declares to a stdio process at
// initialize: the server-to-client requests it can relay to a client.
// The process is shared by requests of different clients, so it cannot
// be told one client's capabilities; the router answers -32601 itself
// when the client of the request running did not advertise the one a
// request needs (callStream.serverRequest).
var relayedCapabilities = json.RawMessage(`{"elicitation":{},"roots":{},"sampling":{}}`)

// process is one running, initialized stdio backend. It serves one Conn
// at a time (the pool hands it out exclusively), but a Conn may run
// several calls at once: answers are matched by id, and every other
// message goes to the first call still running (a sink).
type process struct {
	pool *stdioPool
	cmd  *exec.Cmd
	conn mcp.Connection
	pid  int
	init *InitResult

	// lastID is the last request id used on this process; a Conn continues
	// from it, so ids never repeat within the process's session.
	lastID atomic.Int64

	dead    chan struct{} // closed once stdout has ended
	exitErr error         // how it ended; set before dead is closed
	stopped atomic.Bool   // stop was asked: its exit is expected
	// unasked: stdout ended (or broke) before stop was asked, a crash;
	// written by the reader before dead is closed.
	unasked bool

	mu       sync.Mutex
	pending  map[jsonrpc.ID]chan *jsonrpc.Response
	sinks    []*sink
	lastUsed time.Time // guarded by pool.mu
}

// sink receives the messages a call's stream would carry.
type sink struct {
	ch   chan jsonrpc.Message
	done chan struct{}
}

// start runs the configured command and performs the MCP handshake with
// it under ctx. The process's stdout is read by a goroutine of its own
// for its whole life; its stderr goes to the gateway's log.
func (p *stdioPool) start(ctx context.Context) (*process, error) {
	cfg := p.cfg
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = p.env
	ownProcessGroup(cmd)
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, p.c.newError("start", 0, err)
	}
	// An *os.File as Stderr: no copying goroutine that Wait would wait
	// for, so a grandchild holding stderr open cannot hold up a stop.
	cmd.Stderr = errW
	t := &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}
	conn, err := t.Connect(ctx)
	errW.Close()
	if err != nil {
		errR.Close()
		return nil, p.c.newError("start", 0, fmt.Errorf("starting %q: %w", cfg.Command, err))
	}
	pr := &process{pool: p, cmd: cmd, conn: conn, pid: cmd.Process.Pid,
		dead: make(chan struct{}), pending: map[jsonrpc.ID]chan *jsonrpc.Response{}}
	p.wg.Add(2)
	stderrDone := make(chan struct{})
	go func() {
		defer p.wg.Done()
		defer close(stderrDone)
		logStderr(errR, pr.logger())
	}()
	go pr.run(errR, stderrDone)

	init, err := pr.handshake(ctx, p.clientInfo)
	if err != nil {
		pr.stop()
		if ctx.Err() != nil {
			return nil, p.c.contextError("initialize", ctx)
		}
		return nil, p.c.newError("initialize", 0, err)
	}
	pr.init = init
	pr.logger().Debug("stdio backend process started")
	return pr, nil
}

// handshake sends initialize and notifications/initialized.
func (pr *process) handshake(ctx context.Context, clientInfo json.RawMessage) (*InitResult, error) {
	params, err := initializeParams(Handshake{ProtocolVersion: wire.LatestProtocolVersion,
		ClientInfo: clientInfo, ClientCapabilities: relayedCapabilities})
	if err != nil {
		return nil, err
	}
	id, _ := jsonrpc.MakeID(float64(pr.lastID.Add(1)))
	resp, err := pr.exchange(ctx, &jsonrpc.Request{ID: id, Method: "initialize", Params: params}, nil)
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.ProtocolVersion == "" {
		return nil, errors.New("malformed initialize result")
	}
	if !wire.KnowsProtocolVersion(res.ProtocolVersion) {
		return nil, fmt.Errorf("unsupported protocol version %q", res.ProtocolVersion)
	}
	if err := pr.write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		return nil, err
	}
	return &InitResult{Raw: sharedCapabilities(resp.Result), ProtocolVersion: res.ProtocolVersion}, nil
}

// sharedCapabilities drops from an initialize result what a process
// shared by requests in turn cannot honour for a client: resource
// subscriptions and list-changed notifications belong to a session, and
// a stdio process's session is no client's. The router then advertises
// them only when another backend has them, and opens no listener for a
// stdio backend.
func sharedCapabilities(result json.RawMessage) json.RawMessage {
	var res map[string]json.RawMessage
	if json.Unmarshal(result, &res) != nil {
		return result
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(res["capabilities"], &caps) != nil || caps == nil {
		return result
	}
	for _, name := range []string{"tools", "prompts", "resources"} {
		var c map[string]json.RawMessage
		if json.Unmarshal(caps[name], &c) != nil || c == nil {
			continue
		}
		delete(c, "listChanged")
		delete(c, "subscribe")
		caps[name] = wire.RawObject(c)
	}
	res["capabilities"] = wire.RawObject(caps)
	return wire.RawObject(res)
}

// run reads the process's stdout until it ends, then reaps the process
// and tells the pool.
func (pr *process) run(stderr *os.File, stderrDone <-chan struct{}) {
	defer pr.pool.wg.Done()
	var readErr error
	for {
		msg, err := pr.conn.Read(context.Background())
		if err != nil {
			readErr = err
			break
		}
		pr.dispatch(msg)
	}
	// Whether the end was asked for is read now, when stdout has ended:
	// a request that saw the process die stops it a moment later, which
	// would make a crash look like a stop.
	pr.unasked = !pr.stopped.Load()
	// Anything but the end of stdout leaves it unusable (the go-sdk stops
	// reading at a malformed message): the process is stopped.
	malformed := !errors.Is(readErr, io.EOF) && !pr.stopped.Load()
	if malformed {
		pr.stopped.Store(true)
		pr.logger().Warn("stdio backend wrote a malformed message on stdout; stopping it", "error", readErr)
	}
	waitErr := pr.conn.Close() // closes stdin, waits; SIGTERM, SIGKILL if it lingers
	killProcessGroup(pr.cmd)
	// stderr ends when every writer has: give a grandchild that keeps it
	// open a moment, then stop reading.
	t := time.NewTimer(terminateAfter)
	select {
	case <-stderrDone:
	case <-t.C:
		stderr.Close()
	}
	t.Stop()
	switch {
	case malformed:
		pr.exitErr = fmt.Errorf("%w (stopped: it wrote a malformed message on stdout)", errProcessExited)
	case waitErr != nil:
		pr.exitErr = fmt.Errorf("%w (%v)", errProcessExited, waitErr)
	default:
		pr.exitErr = fmt.Errorf("%w (exit status 0)", errProcessExited)
	}
	close(pr.dead)
	pr.pool.exited(pr)
}

// dispatch routes one message from the process: an answer to the call
// waiting for it, anything else to the first running call, or, when no
// call runs, to unclaimed.
func (pr *process) dispatch(msg jsonrpc.Message) {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		pr.mu.Lock()
		ch := pr.pending[resp.ID]
		delete(pr.pending, resp.ID)
		pr.mu.Unlock()
		if ch != nil {
			ch <- resp // buffered: never blocks
		}
		return // a late answer to a call given up on
	}
	for {
		pr.mu.Lock()
		var s *sink
		if len(pr.sinks) > 0 {
			s = pr.sinks[0]
		}
		pr.mu.Unlock()
		if s == nil {
			pr.unclaimed(msg)
			return
		}
		select {
		case s.ch <- msg:
			return
		case <-s.done: // that call ended meanwhile: the next one, or none
		}
	}
}

// unclaimed handles a message sent while no call runs: it concerns no
// request, and the next request may be another client's, so it is
// dropped; a request gets ping's empty result or -32601 so the process
// never waits for an answer nobody will give.
func (pr *process) unclaimed(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	resp := &jsonrpc.Response{ID: req.ID}
	if wire.ServerRequestOf(req.Method).Liveness {
		resp.Result = json.RawMessage(`{}`)
	} else {
		resp.Error = &jsonrpc.Error{Code: wire.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not supported by the gateway outside a request", req.Method)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = pr.write(ctx, resp)
}

// exchange sends req and waits for its answer, passing every other
// message the process sends meanwhile to handle (nil: unclaimed) on the
// caller's goroutine. Errors are plain causes: the caller names the
// backend.
func (pr *process) exchange(ctx context.Context, req *jsonrpc.Request, handle func(jsonrpc.Message)) (*jsonrpc.Response, error) {
	ch := make(chan *jsonrpc.Response, 1)
	s := &sink{ch: make(chan jsonrpc.Message), done: make(chan struct{})}
	pr.mu.Lock()
	pr.pending[req.ID] = ch
	if handle != nil {
		pr.sinks = append(pr.sinks, s)
	}
	pr.mu.Unlock()
	defer func() {
		close(s.done)
		pr.mu.Lock()
		delete(pr.pending, req.ID)
		for i, x := range pr.sinks {
			if x == s {
				pr.sinks = append(pr.sinks[:i:i], pr.sinks[i+1:]...)
				break
			}
		}
		pr.mu.Unlock()
	}()
	if err := pr.write(ctx, req); err != nil {
		return nil, err
	}
	for {
		select {
		case resp := <-ch:
			return resp, nil
		case msg := <-s.ch:
			handle(msg)
		case <-pr.dead:
			select {
			case resp := <-ch: // answered just before the end
				return resp, nil
			default:
			}
			return nil, pr.exitErr
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// write sends one message. A process that does not read its stdin can
// block a write for ever: when ctx ends first, the process is stopped,
// which unblocks it.
func (pr *process) write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-pr.dead:
		return pr.exitErr
	default:
	}
	stop := context.AfterFunc(ctx, pr.stop)
	defer stop()
	if err := pr.conn.Write(ctx, msg); err != nil {
		select {
		case <-pr.dead:
			return pr.exitErr
		default:
		}
		return fmt.Errorf("writing to the process: %w", err)
	}
	return nil
}

// stop ends the process (stdin closed, then SIGTERM, then SIGKILL), in
// the background; run reaps it. It is idempotent.
func (pr *process) stop() {
	if pr.stopped.Swap(true) {
		return
	}
	select {
	case <-pr.dead:
		return // reaped already
	default:
	}
	pr.pool.wg.Go(func() { _ = pr.conn.Close() })
}

// alive reports whether the process has not ended (it may be stopping).
func (pr *process) alive() bool {
	select {
	case <-pr.dead:
		return false
	default:
		return !pr.stopped.Load()
	}
}

// logger is the pool's logger (vhost, backend) with the process's pid.
func (pr *process) logger() *slog.Logger {
	return pr.pool.log.With("pid", pr.pid)
}
