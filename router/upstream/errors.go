package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrSessionGone reports that the backend answered 404 to a request that
// carried a session id: it no longer knows the session (expired, restarted,
// or created by another replica). The caller may re-initialize and retry.
// It is always wrapped in an *Error.
var ErrSessionGone = errors.New("backend session not found")

// ErrHandshakeRequired reports that a backend sent requests without a
// handshake (Handshake.SkipInitialize) is not stateless (any more): it
// answered with a session id, or refused the request and issues one to an
// initialize (see streamable.issuesSessions). It ran nothing. The caller
// should open again with the full handshake.
var ErrHandshakeRequired = errors.New("backend requires the initialize handshake")

// ErrClosed reports use of a Conn after Close, or a call aborted by Close.
var ErrClosed = errors.New("connection closed")

// Error is a transport-level failure talking to a backend: unreachable,
// timed out, bad HTTP status, malformed body, or a failed handshake.
//
// A JSON-RPC error answer to a routed call is NOT an Error: Call returns it
// as the Response so it can pass through unchanged. Error exists so the
// router can turn the failure into -32603 naming the backend; that is why
// Error() names the backend and the operation, and why it never includes
// header values (they may hold credentials from add_headers) or URLs (their
// query may hold tokens).
type Error struct {
	Backend string // the backend key from config
	Op      string // the JSON-RPC method, or "open"/"DELETE" for transport steps
	Status  int    // HTTP status when the backend answered with a bad one, else 0
	Err     error  // the cause; unwrap it with errors.Is/As
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %q", e.Backend)
	if e.Op != "" {
		b.WriteString(": ")
		b.WriteString(e.Op)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the failure was a deadline (the backend's
// configured timeout or the caller's deadline).
func (e *Error) Timeout() bool { return errors.Is(e.Err, context.DeadlineExceeded) }

// timeoutError is the cause attached to a context bounded by Config.Timeout,
// so the message says which limit fired ("timed out after 30s") while
// errors.Is(err, context.DeadlineExceeded) still holds.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string        { return "timed out after " + e.d.String() }
func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }
func (e *timeoutError) Timeout() bool        { return true }

// newError builds an *Error for this client's backend. An err that already
// is an *Error is returned unchanged so causes are never double-wrapped.
func (c *Client) newError(op string, status int, err error) error {
	var ue *Error
	if errors.As(err, &ue) {
		return err
	}
	return &Error{Backend: c.cfg.Key, Op: op, Status: status, Err: err}
}

// requestError classifies an error from http.Client.Do or from reading a
// body. Network errors are summarised (the router shows Error() to MCP
// clients, and net errors spell out internal addresses and resolvers); the
// full error stays reachable through Unwrap for logs. The *url.Error
// wrapper is dropped because its text holds the URL.
func (c *Client) requestError(op string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return c.newError(op, 0, &netError{"unreachable: " + dns.Err, err})
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		reason := "network error"
		if oe.Err != nil {
			reason = oe.Err.Error() // e.g. "connect: connection refused": no address
		}
		if oe.Op == "dial" {
			return c.newError(op, 0, &netError{"unreachable: " + reason, err})
		}
		return c.newError(op, 0, &netError{oe.Op + ": " + reason, err})
	}
	return c.newError(op, 0, err)
}

// netError is a network failure whose message omits addresses.
type netError struct {
	msg string
	err error
}

func (e *netError) Error() string { return e.msg }
func (e *netError) Unwrap() error { return e.err }

// contextError turns a finished context into an *Error: a Config.Timeout
// expiry keeps its "timed out after" cause; otherwise the context's own
// error (Canceled or DeadlineExceeded) is the cause.
func (c *Client) contextError(op string, ctx context.Context) error {
	var te *timeoutError
	if errors.As(context.Cause(ctx), &te) {
		return c.newError(op, 0, te)
	}
	return c.newError(op, 0, ctx.Err())
}

// cancelReason is the text sent in notifications/cancelled: the timeout,
// the caller's cancel cause when it gave one, or a generic reason.
func cancelReason(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause == nil, cause == context.Canceled:
		return "request cancelled"
	case cause == context.DeadlineExceeded:
		return "deadline exceeded"
	default:
		return cause.Error()
	}
}
