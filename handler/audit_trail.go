package handler

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
)

// The audit trail: one line per routed request (tools/call, prompts/get,
// resources/read, resources/subscribe and unsubscribe, completion/complete),
// in both protocol generations, per refusal on the MCP endpoint that
// names a caller or a target (a missing or bad token, an access rule, a
// plugin, a rate limit, a hidden or unknown name), and per end of a
// gateway-run task (AuditTaskEnd). Lists, pings and notifications are not
// audited (metrics count them).
//
// The line is written by the request-log middleware once the answer is
// out, from what the handler noted (requestNote) and what the router
// noted (router.AuditNote, which the handler gives the request's call as
// Call.Audit: only then does the router note anything). Header values,
// tokens and, unless audit.arguments is full, argument values never
// reach it.

// Audit configures the trail (config audit).
type Audit struct {
	Writer *audit.Writer
	// Arguments is config.AuditArgumentsHash, ...None or ...Full.
	Arguments      string
	TrustedProxies []netip.Prefix
}

// audits reports whether a request ending with status and note is
// audited.
func audits(status int, n *requestNote) bool {
	return status == http.StatusUnauthorized || audited(n.method)
}

// record writes the audit line of one request.
func (a *Audit) record(r *http.Request, n *requestNote, vhost string, status int, start time.Time, routeOf func(vhost, method, id string) string) {
	e := &audit.Event{Time: start, Principal: n.principal, VHost: wire.Clip(vhost), Method: wire.Clip(n.method),
		DurationMS: float64(time.Since(start).Microseconds()) / 1000, ProtocolVersion: wire.Clip(r.Header.Get(headerProtocolVersion)),
		RemoteAddr: a.remoteAddr(r)}
	if n.session != "" {
		e.SessionHash = sessionHash(n.session)
	}
	e.Name = publishedName(n.method, n.params)
	if rn := n.audit; rn != nil {
		e.Backend, e.TraceID, e.TaskHash = rn.Backend, rn.TraceID, rn.Task
		if rn.Name != "" {
			e.Name = wire.Clip(rn.Name)
		}
	}
	if e.Backend == "" && e.Name != "" && status != http.StatusUnauthorized {
		e.Backend = routeOf(vhost, n.method, e.Name)
	}
	switch {
	case n.hasCode:
		code := n.code
		e.Code = &code
	case status == http.StatusUnauthorized:
		code := int64(auth.CodeUnauthorized) // written by the auth middleware, which notes nothing
		e.Code = &code
	}
	e.Outcome, e.Reason = outcomeOf(n, status)
	switch e.Outcome {
	case audit.OutcomeDenied, audit.OutcomeUnauthenticated, audit.OutcomeRateLimited:
		e.Backend = "" // refused before any backend
	}
	if wire.MethodOf(n.method).Tool && status != http.StatusUnauthorized {
		args := toolArguments(n.params)
		switch a.Arguments {
		case config.AuditArgumentsFull:
			if len(args) > 0 {
				e.Arguments = args
			}
		case config.AuditArgumentsNone:
		default:
			e.ArgumentsSHA256 = audit.ArgumentsSHA256(args)
		}
	}
	if len(n.client) > 0 {
		var c audit.Client
		if json.Unmarshal(n.client, &c) == nil && (c.Name != "" || c.Version != "") {
			c.Name, c.Version = wire.Clip(c.Name), wire.Clip(c.Version)
			e.Client = &c
		}
	}
	a.Writer.Write(e)
}

// outcomeOf is a request's outcome and the reason for a refusal: every
// refusal has one (what refused it, else the error's message).
func outcomeOf(n *requestNote, status int) (outcome, reason string) {
	switch {
	case status == http.StatusUnauthorized:
		return audit.OutcomeUnauthenticated, tokenRefusal(n)
	case n.audit != nil && n.audit.Denied:
		return audit.OutcomeDenied, refusalReason(n.audit.Reason, n)
	case n.hasCode && n.code == wire.CodeRateLimited:
		var d struct {
			Limit string `json:"limit"`
		}
		_ = json.Unmarshal(n.errData, &d)
		return audit.OutcomeRateLimited, refusalReason(d.Limit, n)
	case n.hasCode || status >= 400:
		return audit.OutcomeError, ""
	case n.toolError:
		return audit.OutcomeToolError, ""
	}
	return audit.OutcomeOK, ""
}

// refusalReason is what refused a request, or when nothing named it the
// error's message, or its code.
func refusalReason(named string, n *requestNote) string {
	switch {
	case named != "":
		return wire.Clip(named)
	case n.errMsg != "":
		return wire.Clip(n.errMsg)
	}
	return fmt.Sprintf("refused (%d)", n.code)
}

// AuditTaskEnd returns what records the end of each gateway-run task in
// the trail w writes (taskrun.Options.Ended): its outcome, the reason of
// a failure or a cancel, the digest of its id (the task_hash of the
// tools/call line that created it) and how long it ran. The principal is
// the run's: absent for a task settled by an instance that did not run it
// (its runner died), which the task_hash still joins to its caller.
func AuditTaskEnd(w *audit.Writer) func(store.Task) {
	return func(t store.Task) {
		e := &audit.Event{Time: t.UpdatedAt, Event: audit.EventTaskEnd, Principal: t.Principal, VHost: wire.Clip(t.VHost),
			Method: "tools/call", Name: wire.Clip(t.Tool), Backend: t.Backend, TaskHash: taskrun.IDDigest(t.ID),
			DurationMS: float64(t.UpdatedAt.Sub(t.CreatedAt).Microseconds()) / 1000}
		switch t.Status {
		case store.TaskCompleted:
			e.Outcome = audit.OutcomeOK
			if isToolError(t.Result) {
				e.Outcome = audit.OutcomeToolError
			}
		case store.TaskCancelled:
			e.Outcome, e.Reason = audit.OutcomeCancelled, wire.Clip(t.StatusMessage)
		default:
			e.Outcome, e.Reason = audit.OutcomeError, wire.Clip(t.StatusMessage)
			var rpc struct {
				Code *int64 `json:"code"`
			}
			if json.Unmarshal(t.Error, &rpc) == nil {
				e.Code = rpc.Code
			}
		}
		w.Write(e)
	}
}

// tokenRefusal is the class of a 401 (auth.Classes: no_token, audience,
// expired, ...), as the auth middleware noted it; never the token, nor
// the detail, which names the token's claims and belongs in the log.
func tokenRefusal(n *requestNote) string {
	if n.authFailure.Class == "" {
		return auth.ClassNoToken
	}
	return n.authFailure.Class
}

// toolArguments is a tools/call's params.arguments.
func toolArguments(params json.RawMessage) json.RawMessage {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Arguments
}

// remoteAddr is the request's peer address, or, when the peer is a
// trusted proxy, the last address of X-Forwarded-For that is not one: the
// first hop the operator does not control, which a client cannot forge
// past the trusted proxies.
func (a *Audit) remoteAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !a.trusted(peer) {
		return wire.Clip(host)
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: trust nothing before it
		}
		if !a.trusted(addr) {
			return addr.String()
		}
	}
	return peer.String()
}

func (a *Audit) trusted(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range a.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// noteAudit makes n an audit note for the router to fill in when the
// trail is on (auditNote gives it to the request's call).
func noteAudit(a *Audit, n *requestNote) {
	if a != nil && a.Writer != nil {
		n.audit = &router.AuditNote{}
	}
}

// auditNote is the note the router fills in for the call of the request
// n notes (router.Call.Audit); nil when the trail is off or n is nil.
func (n *requestNote) auditNote() *router.AuditNote {
	if n == nil {
		return nil
	}
	return n.audit
}

// audited reports whether a method's requests are audited, as wire's
// method table says (wire.Method.Audited).
func audited(method string) bool { return wire.MethodOf(method).Audited() }

// ClientAddr returns the function that names a request's client address
// as the audit trail does (through the trusted proxies), for other
// per-source bounds (the authorization server's registration limit).
func ClientAddr(trusted []netip.Prefix) func(*http.Request) string {
	return (&Audit{TrustedProxies: trusted}).remoteAddr
}
