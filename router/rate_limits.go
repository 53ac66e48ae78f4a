package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Rate limits. A virtual host may carry limits on its tools/call requests,
// counted in the store so that every instance shares them (GCRA,
// store.RateLimits): per principal, per principal and tool, or for the
// whole vhost, each optionally narrowed to tools whose published name
// matches a glob (the names clients see, as access rules judge them).
//
// A request is counted once, when it is admitted: after it was routed and
// found visible (a hidden or unknown name is refused as unknown, not
// counted, so a limit says nothing about what exists), before any plugin
// or backend sees it. Every limit that applies is decided in one store
// round trip, all or nothing. Over a limit the answer is -32029 naming
// the limit, and HTTP 429 with Retry-After: the transport asks Admit (or
// AdmitModern) before it begins an event stream, so the status can still
// be set. Only tools/call counts: it is what reaches backends' work, the
// thing operators limit; lists are cheap and cacheable.

// Kinds of rate limit: whose requests one counter counts.
const (
	RatePerPrincipal     = "principal"      // each caller (JWT sub) apart
	RatePerPrincipalTool = "principal_tool" // each caller and tool apart
	RatePerVHost         = "vhost"          // every caller of the vhost together
)

// RateLimit is one limit of a virtual host, as configured.
type RateLimit struct {
	Per string
	// Tools, when set, narrows the limit to tools whose published name
	// matches one of these globs ('*' any run of characters).
	Tools  []string
	Limit  int64
	Window time.Duration
	// Batch > 1 counts the limit locally (rate_allowance.go): each
	// instance takes Batch requests from the shared counter at once. 0
	// or 1: every request is taken from the store (exact).
	Batch int64
}

// RateLimitPolicy is a virtual host's compiled rate limits
// (CompileRateLimits). It is immutable and safe for concurrent use.
type RateLimitPolicy struct {
	limits []rateLimit
}

type rateLimit struct {
	RateLimit
	index int
	tools []nameGlob
	// id names the limit's counters: its position and a digest of its
	// definition, so a reload that changes a limit starts it afresh.
	id string
}

// RateLimitError is one problem of one limit. Field is "per", "limit",
// "window", "tools[i]", or "" for the limit as a whole.
type RateLimitError struct {
	Limit int
	Field string
	Msg   string
}

func (e *RateLimitError) Error() string {
	at := "rate_limits[" + strconv.Itoa(e.Limit) + "]"
	if e.Field != "" {
		at += "." + e.Field
	}
	return at + ": " + e.Msg
}

// maxRateWindow bounds a window: counters live as long as it.
const maxRateWindow = 24 * time.Hour

// CompileRateLimits checks a virtual host's limits and compiles their
// globs. The error joins one *RateLimitError per problem.
func CompileRateLimits(limits []RateLimit) (*RateLimitPolicy, error) {
	p := &RateLimitPolicy{}
	var errs []error
	fail := func(i int, field, format string, args ...any) {
		errs = append(errs, &RateLimitError{Limit: i, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, l := range limits {
		switch l.Per {
		case RatePerPrincipal, RatePerPrincipalTool, RatePerVHost:
		case "":
			fail(i, "per", "missing: give principal, principal_tool or vhost")
		default:
			fail(i, "per", "unknown kind %q: give principal, principal_tool or vhost", l.Per)
		}
		if l.Limit < 1 {
			fail(i, "limit", "must be at least 1")
		}
		switch {
		case l.Window < time.Second:
			fail(i, "window", "must be at least 1s")
		case l.Window > maxRateWindow:
			fail(i, "window", "must be at most 24h")
		case l.Limit >= 1 && l.Window.Microseconds()/l.Limit < 1:
			fail(i, "limit", "more than one request per microsecond cannot be counted")
		}
		if l.Batch < 0 || (l.Limit >= 1 && l.Batch > l.Limit) {
			fail(i, "batch", "must be between 1 and the limit (%d)", l.Limit)
		}
		rl := rateLimit{RateLimit: l, index: i}
		rl.Tools = append([]string(nil), l.Tools...)
		for j, src := range l.Tools {
			g, err := compileGlob(src)
			if err != nil {
				fail(i, "tools["+strconv.Itoa(j)+"]", "%v", err)
			}
			rl.tools = append(rl.tools, g)
		}
		h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d", l.Per, strings.Join(l.Tools, "\x00"), l.Limit, l.Window)))
		rl.id = strconv.Itoa(i) + "-" + hex.EncodeToString(h[:6])
		p.limits = append(p.limits, rl)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// batched reports whether any limit is counted locally.
func (p *RateLimitPolicy) batched() bool {
	if p == nil {
		return false
	}
	for _, l := range p.limits {
		if l.Batch > 1 {
			return true
		}
	}
	return false
}

// Limits returns the limits as configured.
func (p *RateLimitPolicy) Limits() []RateLimit {
	if p == nil {
		return nil
	}
	out := make([]RateLimit, len(p.limits))
	for i, l := range p.limits {
		out[i] = l.RateLimit
	}
	return out
}

// applies reports whether the limit counts a call of the published tool.
func (l *rateLimit) applies(tool string) bool {
	return len(l.tools) == 0 || anyMatch(l.tools, tool)
}

// name is how an answer names the limit.
func (l *rateLimit) name() string {
	return fmt.Sprintf("rate_limits[%d] (%s, %d per %v)", l.index, l.Per, l.Limit, l.Window)
}

// counter is the store key of the limit's counter for a caller and tool.
// Principals and tool names are digested: keys stay short whatever a
// token's sub holds, and the store holds no identities.
func (l *rateLimit) counter(principal, tool string) string {
	switch l.Per {
	case RatePerPrincipal:
		return l.id + ":p:" + digest(principal)
	case RatePerPrincipalTool:
		return l.id + ":pt:" + digest(principal+"\x00"+tool)
	}
	return l.id + ":v"
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

// RateLimits reports whether virtual host vhost has rate limits: whether
// Admit may need the store.
func (r *Router) RateLimits(vhost string) bool {
	v, ok := r.table.Load().vhosts[vhost]
	return ok && v.limits != nil
}

// Admit counts a request of an established session against its virtual
// host's rate limits, before its answer begins: a refusal is answered
// with HTTP 429 (RateLimited), which an answer already streaming could
// not carry. It returns nil when the request may go on; Handle then does
// not count it again. Requests that are not tools/call, or name no
// visible tool, pass (Handle answers them).
func (r *Router) Admit(ctx context.Context, c *Call) *jsonrpc.Response {
	v, ok := r.table.Load().vhosts[c.Session.VHost]
	if !ok || c.admitted || v.limits == nil || c.Request.Method != "tools/call" || !c.Request.IsCall() {
		return nil
	}
	t, rerr := r.resolve(v, c.Request.Method, c.Request.Params)
	if rerr != nil || !r.accessFor(v, c).routedVisible(v, c.Request.Method, t) {
		return nil
	}
	return r.admit(ctx, v, c.Request, c.Session.Principal, t, &c.admitted)
}

// AdmitModern is Admit for a 2026-07-28 request.
func (r *Router) AdmitModern(ctx context.Context, c *ModernCall) *jsonrpc.Response {
	v, ok := r.table.Load().vhosts[c.VHost]
	if !ok {
		return nil
	}
	return r.admitModern(ctx, v, c)
}

func (r *Router) admitModern(ctx context.Context, v *vhost, c *ModernCall) *jsonrpc.Response {
	if c.admitted || v.limits == nil || c.Request.Method != "tools/call" || !c.Request.IsCall() {
		return nil
	}
	t, rerr := r.resolve(v, c.Request.Method, c.Request.Params)
	if rerr != nil {
		return nil
	}
	if a := modernAccess(v, c); a != nil && !a.routedVisible(v, c.Request.Method, t) {
		return nil
	}
	return r.admit(ctx, v, c.Request, c.Principal, t, &c.admitted)
}

// modernAccess returns a modern request's access decision (nil: the vhost
// has no rules), deciding it on first use.
func modernAccess(v *vhost, c *ModernCall) *accessView {
	if v.access == nil {
		return nil
	}
	if c.access == nil || c.access.policy != v.access {
		a := v.access.decide(v.name, c.Claims)
		c.access = &a
	}
	return c.access
}

// admitTarget counts a routed call that Admit did not see (a batch's
// call, an embedder's Handle).
func (r *Router) admitTarget(ctx context.Context, v *vhost, c *Call, t *target) *jsonrpc.Response {
	if c.admitted || v.limits == nil || c.Request.Method != "tools/call" {
		return nil
	}
	return r.admit(ctx, v, c.Request, c.Session.Principal, t, &c.admitted)
}

// admit counts one tools/call of principal against every limit of the
// vhost that applies to its tool, in one store round trip.
func (r *Router) admit(ctx context.Context, v *vhost, req *jsonrpc.Request, principal string, t *target, admitted *bool) *jsonrpc.Response {
	*admitted = true
	tool := v.publishedTool(t.backend, t.name)
	var checks [4]store.RateCheck // most vhosts have few limits: no allocation
	list := checks[:0]
	var which [4]*rateLimit
	applied := which[:0]
	var local [4]store.RateCheck // batched limits served from this instance's allowance
	handed := local[:0]
	now := time.Now()
	for i := range v.limits.limits {
		l := &v.limits.limits[i]
		if !l.applies(tool) {
			continue
		}
		c := store.RateCheck{Key: l.counter(principal, tool), Limit: l.Limit, Window: l.Window}
		if l.Batch > 1 && v.allowance.take(c.Key, now) {
			handed = append(handed, c)
			continue
		}
		if l.Batch > 1 {
			c.Count = l.Batch
		}
		list = append(list, c)
		applied = append(applied, l)
	}
	if len(list) == 0 {
		return nil
	}
	verdict, err := r.opts.Store.TakeRate(ctx, v.name, list)
	if err == nil && !verdict.Allowed && list[verdict.Denied].Count > 1 {
		// Near the limit a batch no longer fits: take this request alone.
		for i := range list {
			list[i].Count = 0
		}
		verdict, err = r.opts.Store.TakeRate(ctx, v.name, list)
	}
	if err != nil || !verdict.Allowed {
		for _, c := range handed { // not used: the call does not run
			v.allowance.give(c.Key, 1, now, c.Window)
		}
	}
	if err != nil {
		return r.storeUnavailable(req.ID, err)
	}
	if verdict.Allowed {
		for _, c := range list {
			v.allowance.give(c.Key, c.Count-1, now, c.Window) // a batch's spares
		}
	}
	obs, _ := r.opts.Observer.(PluginObserver)
	if verdict.Allowed {
		if obs != nil {
			obs.PluginDecision("rate_limit", "allow")
		}
		return nil
	}
	if obs != nil {
		obs.PluginDecision("rate_limit", "deny")
	}
	l := applied[verdict.Denied]
	wait := max(verdict.RetryAfter, time.Millisecond)
	secs := int64(math.Ceil(wait.Seconds()))
	data, _ := json.Marshal(map[string]any{"limit": fmt.Sprintf("rate_limits[%d]", l.index), "retryAfterMs": wait.Milliseconds()})
	return &jsonrpc.Response{ID: req.ID, Extra: refusal{status: http.StatusTooManyRequests, retryAfter: wait}, Error: &jsonrpc.Error{
		Code:    CodeRateLimited,
		Message: fmt.Sprintf("rate limit exceeded: %s; retry in %ds", l.name(), secs),
		Data:    data,
	}}
}
