package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A stdio backend is a local program speaking MCP on its stdin and stdout
// (transport stdio). Each instance keeps a small pool of initialized
// processes per backend (stdio_pool.go); a Conn takes one for itself from
// Open to Close, as a per-request HTTP connection takes a fresh backend
// session, so no client session is tied to a process and requests may
// move between instances freely.
//
// One Conn at a time per process, not requests multiplexed by id: a stdio
// backend's notifications (log messages, progress without a known token)
// and its requests to the client carry nothing that says which request
// they belong to, so only a process serving one request can route them;
// and a process that crashes or hangs then fails that one request. The
// cost is that Max bounds the requests to the backend an instance runs at
// once; more wait for a free process, within the backend's timeout.
//
// What a process learns from one request must not reach another client:
// messages sent while no call runs are dropped, log messages are passed
// only at the level the request's client chose (none when it chose none),
// and resource subscriptions are refused (-32601): nobody would receive
// the updates, since a stdio backend has no listener (Listen is
// ErrNoStream) and the process's next request may be another client's.

// stdioConn is the transport of a Conn holding a pooled process.
type stdioConn struct {
	conn *Conn
	pool *stdioPool
	proc *process
	// level is the client's log level for this request ("" none): log
	// messages below it are dropped.
	level string
	// spent is set when a call ended without its answer: the process may
	// still be working on it, so it is not given to another request.
	spent atomic.Bool
}

// openStdio takes a process from the pool for conn. The handshake was
// made when the process started; h's version and capabilities are those
// of the request, which the router already knows from the process's
// snapshot, and its log level filters what the request gets.
func (c *Client) openStdio(ctx context.Context, conn *Conn, h Handshake) error {
	pr, err := c.pool.acquire(ctx)
	if err != nil {
		return err
	}
	conn.t = &stdioConn{conn: conn, pool: c.pool, proc: pr, level: h.LogLevel}
	conn.init = pr.init
	conn.protocolVersion = pr.init.ProtocolVersion
	conn.nextID.Store(pr.lastID.Load())
	return nil
}

func (s *stdioConn) roundTrip(ctx context.Context, req *jsonrpc.Request, handle func(context.Context, jsonrpc.Message), _ CallOptions) (*jsonrpc.Response, error) {
	c := s.conn.c
	if wire.MethodOf(req.Method).Subscription != wire.SubscriptionNone {
		return &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: wire.CodeMethodNotFound,
			Message: fmt.Sprintf("backend %q runs as a shared local process and takes no resource subscriptions", c.cfg.Key)}}, nil
	}
	s.keepID()
	resp, err := s.proc.exchange(ctx, req, func(msg jsonrpc.Message) {
		if s.passes(msg) {
			handle(ctx, msg)
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			s.spent.Store(true)
			return nil, c.newError(req.Method, 0, ctx.Err())
		}
		return nil, c.newError(req.Method, 0, err)
	}
	if err := chargeAnswer(ctx, resp); err != nil {
		return nil, c.newError(req.Method, 0, err)
	}
	return resp, nil
}

// keepID records the Conn's last request id on the process, so the next
// Conn goes on from it.
func (s *stdioConn) keepID() {
	for {
		old, cur := s.proc.lastID.Load(), s.conn.nextID.Load()
		if cur <= old || s.proc.lastID.CompareAndSwap(old, cur) {
			return
		}
	}
}

// passes filters what a call's stream gets from a shared process: a log
// message needs the request's client to have asked for its level; list
// changes and resource updates concern the process's own session, no
// client's.
func (s *stdioConn) passes(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() {
		return true
	}
	switch n := wire.NotificationOf(req.Method); {
	case n.Log:
		var p struct {
			Level string `json:"level"`
		}
		_ = json.Unmarshal(req.Params, &p)
		return s.level != "" && logSeverity(p.Level) >= logSeverity(s.level)
	case n.AboutSession():
		return false
	}
	return true
}

// logSeverity orders the MCP log levels (RFC 5424); unknown ones rank
// lowest.
func logSeverity(level string) int { return wire.LogLevelRank(level) }

func (s *stdioConn) send(ctx context.Context, msg jsonrpc.Message) error {
	if err := s.proc.write(ctx, msg); err != nil {
		return s.conn.c.newError(opOf(msg), 0, err)
	}
	return nil
}

func (s *stdioConn) listen(context.Context, func(context.Context, jsonrpc.Message), func()) error {
	return s.conn.c.newError("listen", 0, ErrNoStream)
}

// awaitClient counts the process as waiting on a client (clientWaiter).
func (s *stdioConn) awaitClient() (func(), error) { return s.pool.awaitClient() }

// close gives the process back to the pool (keep has no meaning: there is
// no backend session to keep beyond the process).
func (s *stdioConn) close(bool) error {
	s.keepID()
	s.pool.release(s.proc, !s.spent.Load())
	return nil
}

// chargeAnswer charges an answer read whole off a process to the
// request's response budget (response_budget.go), as a streamed HTTP body
// is charged while it is read.
func chargeAnswer(ctx context.Context, resp *jsonrpc.Response) error {
	t := tabFrom(ctx)
	if t == nil {
		return nil
	}
	n := int64(len(resp.Result))
	for n > 0 {
		got, err := t.acquire(ctx, min(n, meterChunk))
		if err != nil {
			return err
		}
		n -= got
	}
	return nil
}

// errNotStdio keeps Discover from starting a process: a stdio backend is
// spoken to in the session protocol (its process is initialized once).
var errNotStdio = errors.New("stdio backends speak the session protocol")
