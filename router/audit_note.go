package router

import (
	"context"
	"errors"

	"github.com/mcpgw/gateway/router/hook"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The audit trail (handler/audit_trail.go) records who called what and
// whether it was allowed. Some of that only the router knows: which
// backend took a request, that a name was refused by an access rule
// (which the client is told as "unknown", on purpose) or a plugin, and the
// request's trace id. The handler puts an AuditNote in the request's
// context when the trail is on; the router fills it in as it decides.
// Without one nothing is noted and nothing is spent.

// AuditNote is what the router tells the audit trail of one request.
type AuditNote struct {
	// Backend is the key of the backend the request was routed to.
	Backend string
	// Name is the published name the request was routed by, when the
	// router resolved it otherwise than the client wrote it (a raw tool
	// name an MCP App used).
	Name string
	// Denied, with Reason, says an access rule or a plugin refused it.
	Denied bool
	Reason string
	// TraceID is the request's trace, when traced.
	TraceID string
}

type auditNoteKey struct{}

// WithAuditNote returns ctx carrying n.
func WithAuditNote(ctx context.Context, n *AuditNote) context.Context {
	return context.WithValue(ctx, auditNoteKey{}, n)
}

// auditNote is ctx's note, nil when the trail is off.
func auditNote(ctx context.Context) *AuditNote {
	n, _ := ctx.Value(auditNoteKey{}).(*AuditNote)
	return n
}

// noteRouted records where a routed request went.
func noteRouted(ctx context.Context, t *target) {
	if n := auditNote(ctx); n != nil && t != nil {
		n.Backend = t.backend
	}
}

// noteDenied records a refusal by an access rule or a plugin.
func noteDenied(ctx context.Context, reason string) {
	if n := auditNote(ctx); n != nil {
		n.Denied, n.Reason = true, reason
	}
}

// hookRefusal is hookError, noted for the audit trail when a plugin
// denied the request.
func (r *Router) hookRefusal(ctx context.Context, err error) *jsonrpc.Error {
	e := hookError(err)
	var d *hook.Denial
	if errors.As(err, &d) {
		noteDenied(ctx, d.Message)
	}
	return e
}
