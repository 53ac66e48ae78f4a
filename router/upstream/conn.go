package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// transport is one connection's wire: Streamable HTTP or legacy HTTP+SSE.
// Its errors are *Error values; Conn turns context expiry into the
// matching *Error and handles cancellation, so transports need not.
type transport interface {
	// roundTrip sends the call req and returns the response carrying its
	// id. Every other message that arrives for the call is passed to
	// handle, in arrival order, on the caller's goroutine or the stream
	// reader's; handle may send (Reply) but must not call roundTrip.
	// opts are the call's optional arguments (call_options.go), the
	// zero value for a handshake.
	roundTrip(ctx context.Context, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), opts CallOptions) (*jsonrpc.Response, error)
	// send delivers a notification or a response; no answer is expected.
	send(ctx context.Context, msg jsonrpc.Message) error
	// listen delivers the messages no call claims until ctx ends or the
	// stream breaks (see Conn.Listen).
	listen(ctx context.Context, handle func(context.Context, jsonrpc.Message), ready func()) error
	// close releases the transport; keep preserves the backend session.
	close(keep bool) error
}

// Conn is one per-request connection to a backend. It is safe for
// concurrent use; upstream request ids are numbered per Conn (1, 2, ...,
// or from a random base on a kept backend session other Conns share) and
// never taken from the downstream request.
type Conn struct {
	c       *Client
	t       transport
	headers http.Header // the header policy's result, fixed at Open
	nextID  atomic.Int64
	init    *InitResult

	// Close first ends abort, failing in-flight operations (each call
	// still tells the backend with notifications/cancelled), waits for the
	// calls to return, then ends life, which bounds the cleanup messages
	// (cancellations, auto-replies), and finally closes the transport.
	abort, life     context.Context
	stopOps, kill   context.CancelFunc
	closeOnce       sync.Once
	closing         bool          // guarded by mu
	inflight        int           // calls running; guarded by mu
	drained         chan struct{} // closed when inflight drops to 0 during Close; guarded by mu
	sessionID       string        // guarded by mu
	protocolVersion string        // guarded by mu
	sessionGone     bool          // guarded by mu
	// expectStateless is set when the handshake was skipped because the
	// backend was known to issue no session: a session id in an answer
	// then means it wants a handshake after all (ErrHandshakeRequired).
	expectStateless bool
	// meta is set on a 2026-07-28 connection: what every request's _meta
	// carries (see modern.go).
	meta map[string]json.RawMessage
	// span is the trace context the connection was opened under, which
	// its requests carry (trace_context.go).
	span trace.SpanContext
	// clocks are the running calls' timeouts, stopped while holds > 0:
	// a call waits on the client (call_clock.go). Guarded by mu.
	clocks map[*callClock]struct{}
	holds  int
	mu     sync.Mutex
}

// closeWait bounds how long Close waits for in-flight calls to wind down
// (they need at most cleanupTimeout to send notifications/cancelled); it
// also keeps a Close called from inside onMessage from deadlocking.
const closeWait = cleanupTimeout + 500*time.Millisecond

func newConn(c *Client, headers http.Header) *Conn {
	conn := &Conn{c: c, headers: headers}
	conn.life, conn.kill = context.WithCancel(context.Background())
	conn.abort, conn.stopOps = context.WithCancel(conn.life)
	return conn
}

// begin registers an in-flight call; it fails once Close has started.
func (conn *Conn) begin() bool {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if conn.closing {
		return false
	}
	conn.inflight++
	return true
}

func (conn *Conn) end() {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	conn.inflight--
	if conn.inflight == 0 && conn.drained != nil {
		close(conn.drained)
		conn.drained = nil
	}
}

// Init returns the handshake result, or nil when no handshake was made.
func (conn *Conn) Init() *InitResult { return conn.init }

// Modern reports whether the connection speaks protocol 2026-07-28.
func (conn *Conn) Modern() bool { return conn.meta != nil }

// SessionID returns the backend's Mcp-Session-Id ("" when stateless).
func (conn *Conn) SessionID() string {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return conn.sessionID
}

// ProtocolVersion returns the version sent as MCP-Protocol-Version.
func (conn *Conn) ProtocolVersion() string {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return conn.protocolVersion
}

func (conn *Conn) state() (sessionID, protocolVersion string, gone bool) {
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return conn.sessionID, conn.protocolVersion, conn.sessionGone
}

func (conn *Conn) setSessionID(id string) {
	conn.mu.Lock()
	conn.sessionID = id
	conn.mu.Unlock()
}

func (conn *Conn) markSessionGone() {
	conn.mu.Lock()
	conn.sessionGone = true
	conn.mu.Unlock()
}

// newCall numbers a request and completes its _meta for the connection,
// with the trace context of ctx's span.
func (conn *Conn) newCall(ctx context.Context, method string, params json.RawMessage) *jsonrpc.Request {
	// MakeID maps a float64 to an integer id (the package has no Int64ID);
	// ids stay far below 2^53, so the conversion is exact.
	id, _ := jsonrpc.MakeID(float64(conn.nextID.Add(1)))
	if conn.meta != nil {
		params = withMeta(params, conn.meta, traceMeta(ctx, conn.spanContext(ctx)))
	} else {
		params = withoutModernMeta(params, traceMeta(ctx, conn.spanContext(ctx)))
	}
	return &jsonrpc.Request{ID: id, Method: method, Params: params}
}

// Call sends one request and returns the backend's response, which may
// carry a JSON-RPC error: that is the backend's answer and passes through
// as the Response, not as a Go error.
//
// onMessage (may be nil) receives, in order, every other message the
// backend sends on this call's stream while it runs: notifications and
// server-to-client requests, which the caller answers with Reply. With a
// nil onMessage, requests are answered here (ping with an empty result,
// anything else with -32601) so the backend never waits for an answer
// nobody will give. onMessage runs on the calling goroutine and holds up
// the stream while it runs: it may Reply, but must not wait on another
// Call of the same Conn.
//
// If ctx ends (or Config.Timeout fires) first, Call sends
// notifications/cancelled upstream, synchronously with a short detached
// timeout so a following Close cannot overtake it, and returns an *Error
// wrapping the context's error.
func (conn *Conn) Call(ctx context.Context, method string, params json.RawMessage, onMessage func(jsonrpc.Message)) (*jsonrpc.Response, error) {
	return conn.CallWith(ctx, method, params, onMessage, CallOptions{})
}

// CallWith is Call with the call's optional arguments (call_options.go),
// which reach this call alone.
func (conn *Conn) CallWith(ctx context.Context, method string, params json.RawMessage, onMessage func(jsonrpc.Message), opts CallOptions) (*jsonrpc.Response, error) {
	if !conn.begin() {
		return nil, conn.c.newError(method, 0, ErrClosed)
	}
	defer conn.end()
	req := conn.newCall(ctx, method, params)
	callCtx, cancel := conn.startClock(ctx)
	defer cancel()
	stop := context.AfterFunc(conn.abort, cancel)
	defer stop()

	resp, err := conn.t.roundTrip(callCtx, req, conn.dispatcher(onMessage), opts)
	if err == nil {
		return resp, nil
	}
	if callCtx.Err() == nil {
		return nil, err
	}
	if conn.abort.Err() != nil {
		conn.sendCancelled(ctx, req.ID, "connection closed")
		return nil, conn.c.newError(method, 0, ErrClosed)
	}
	conn.sendCancelled(ctx, req.ID, cancelReason(callCtx))
	var bw *budgetWaitError
	if errors.As(err, &bw) {
		return nil, err // says what the call was waiting for
	}
	return nil, conn.c.contextError(method, callCtx)
}

// Reply answers a server-to-client request received through onMessage,
// under the backend's own request id.
func (conn *Conn) Reply(ctx context.Context, resp *jsonrpc.Response) error {
	if resp == nil || !resp.ID.IsValid() {
		return conn.c.newError("response", 0, errors.New("reply without a request id"))
	}
	return conn.deliver(ctx, "response", resp)
}

func (conn *Conn) deliver(ctx context.Context, op string, msg jsonrpc.Message) error {
	if conn.abort.Err() != nil {
		return conn.c.newError(op, 0, ErrClosed)
	}
	sctx, cancel := conn.c.withTimeout(ctx)
	defer cancel()
	stop := context.AfterFunc(conn.abort, cancel)
	defer stop()
	err := conn.t.send(sctx, msg)
	if err != nil && sctx.Err() != nil {
		if conn.abort.Err() != nil {
			return conn.c.newError(op, 0, ErrClosed)
		}
		return conn.c.contextError(op, sctx)
	}
	return err
}

// Close ends the connection. For Streamable HTTP with a session id it
// sends DELETE (bounded by ~2s) unless keep is set, which reuse mode uses
// to keep the backend session for later requests; for legacy SSE it closes
// the GET stream and waits for its reader. In-flight calls are cancelled
// first (the backend gets notifications/cancelled for each) and fail with
// ErrClosed. Close is idempotent: later calls return nil. Calling it from
// onMessage delays it by closeWait.
func (conn *Conn) Close(keep bool) error {
	var err error
	conn.closeOnce.Do(func() {
		conn.mu.Lock()
		conn.closing = true
		var drained chan struct{}
		if conn.inflight > 0 {
			conn.drained = make(chan struct{})
			drained = conn.drained
		}
		conn.mu.Unlock()
		conn.stopOps()
		if drained != nil {
			t := time.NewTimer(closeWait)
			select {
			case <-drained:
			case <-t.C:
			}
			t.Stop()
		}
		conn.kill()
		if conn.t != nil {
			err = conn.t.close(keep)
		}
	})
	return err
}

// sendCancelled tells the backend to stop working on id. It is detached
// from ctx (which has ended) and best effort: the call has failed either
// way, so its error is not reported.
func (conn *Conn) sendCancelled(ctx context.Context, id jsonrpc.ID, reason string) {
	if conn.Modern() {
		return // 2026-07-28: closing the request's HTTP exchange is the cancellation
	}
	params, err := json.Marshal(struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}{id.Raw(), reason})
	if err != nil {
		return
	}
	nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	stop := context.AfterFunc(conn.life, cancel)
	defer stop()
	_ = conn.t.send(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params})
}

// dispatcher returns the handler for messages that are not the call's
// response: the caller's onMessage, or the built-in answers.
func (conn *Conn) dispatcher(onMessage func(jsonrpc.Message)) func(context.Context, jsonrpc.Message) {
	return func(ctx context.Context, msg jsonrpc.Message) {
		if onMessage != nil {
			onMessage(msg)
			return
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			conn.autoReply(ctx, req)
		}
	}
}

// autoReply answers a server-to-client request nobody will handle: ping
// gets its empty result, anything else -32601, so the backend's tool sees
// an error instead of hanging until its own timeout.
func (conn *Conn) autoReply(ctx context.Context, req *jsonrpc.Request) {
	resp := &jsonrpc.Response{ID: req.ID}
	if wire.ServerRequestOf(req.Method).Liveness {
		resp.Result = json.RawMessage(`{}`)
	} else {
		resp.Error = &jsonrpc.Error{
			Code:    wire.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not supported by the gateway for this request", req.Method),
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	stop := context.AfterFunc(conn.life, cancel)
	defer stop()
	_ = conn.t.send(rctx, resp)
}

// opOf names a message for errors: its method, or "response".
func opOf(msg jsonrpc.Message) string {
	if r, ok := msg.(*jsonrpc.Request); ok {
		return r.Method
	}
	return "response"
}
