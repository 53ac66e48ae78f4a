package router

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Admission: what the router decides of a request before it serves it
// (Decisions: the vhost, the caller's access view, a routed method's
// target), and its rate limits.
//
// A virtual host may carry limits on its tools/call requests, counted in
// the store so that every instance shares them (GCRA, store.RateLimits):
// per principal, per principal and tool, or for the whole vhost, each
// optionally narrowed to tools whose published name matches a glob (the
// names clients see, as access rules judge them).
//
// A request is counted once, when it is admitted: after it was routed and
// found visible (a hidden or unknown name is refused as unknown, not
// counted, so a limit says nothing about what exists), before any plugin
// or backend sees it. Every limit that applies is decided in one store
// round trip, all or nothing. Over a limit the answer is -32029 naming
// the limit, and HTTP 429 with Retry-After: the transport asks Admit
// before it begins an event stream, so the status can still be set. Only
// tools/call counts: it is what reaches backends' work, the thing
// operators limit; lists are cheap and cacheable.

// RateLimits reports whether virtual host vhost has rate limits: whether
// Admit may need the store.
func (r *Router) RateLimits(vhost string) bool {
	v, ok := r.table.Load().vhosts[vhost]
	return ok && v.limits != nil
}

// Decisions are what the router decides of a request before it serves
// it, once, on the routing table of that moment: the virtual host, the
// caller's access view, a routed method's target. Admit makes them and
// counts the request against the vhost's rate limits; Serve takes them,
// so nothing on the way decides again or reads another table (a reload
// in between changes the next request, not this one). They are a value:
// nothing below Admit (decide) writes them. The one decision Admit
// cannot make, a backend's own tool name (raw_tool_names.go: it needs
// the caller's backends), is made once in serve, as new decisions.
type Decisions struct {
	v      *vhost
	access policy.View // policy.View{} when the vhost has no rules
	// t is a routed method's target, or rerr why it has none (an unknown
	// or malformed name); both nil for methods that are not routed.
	t    *target
	rerr *jsonrpc.Error
	// search: a tool_search vhost's search_tools, which the gateway
	// answers; unwrapped: the request was a call_tool, and is now the
	// tools/call it stands for (tool_search.go).
	search, unwrapped bool
}

// decide makes c's decisions on the current routing table; nil when c's
// virtual host is not configured. A call_tool is replaced by the call it
// stands for first (tool_search.go), so everything decided is the real
// call's.
func (r *Router) decide(c *Call) *Decisions {
	v, ok := r.table.Load().vhosts[c.VHost]
	if !ok {
		return nil
	}
	d := &Decisions{v: v, access: v.accessOf(c.Claims)}
	if r.fed.decideToolSearch(v, c, d) && (d.search || d.rerr != nil) {
		return d
	}
	if rowOf(c.Request.Method).serving == routed && c.Request.IsCall() {
		d.t, d.rerr = r.calls.resolve(v, c.Request.Method, c.Request.Params)
	}
	return d
}

// relayed are the decisions of a call rebuilt to be relayed again outside
// Serve (a launched task's run, tasks_launch.go): admitted where it was
// created, to target t, judged by the caller's claims on today's rules.
func relayed(v *vhost, claims map[string]any, t *target) *Decisions {
	return &Decisions{v: v, access: v.accessOf(claims), t: t}
}

// Admit decides a request (Decisions) and counts it against its virtual
// host's rate limits, before its answer begins: a refusal is answered with
// HTTP 429 (Refusal), which an answer already streaming could not
// carry. The transport passes the decisions to Serve; refusal is non-nil
// when the request must not go on. Only a tools/call of a visible tool is
// counted (a hidden or unknown name is refused as unknown by Serve, not
// counted, so a limit says nothing about what exists). It needs the
// request's VHost, Principal and, for a 2025-era request, nothing of its
// session: the transport may ask it while the session loads. Decisions
// are nil when the virtual host is not configured.
func (r *Router) Admit(ctx context.Context, c *Call) (d *Decisions, refusal *jsonrpc.Response) {
	c.normalize()
	if d = r.decide(c); d == nil {
		return nil, nil
	}
	return d, r.count(ctx, d, c.Request, c.Principal)
}

// count counts req, decided by d, against the rate limits: once, where
// the decisions are made (Admit; for a backend's own tool name, Serve:
// raw_tool_names.go decideRawTool). A routed target the caller may see but lacks the scopes for is
// refused here (HTTP 403); a hidden or unknown one is left for routed to
// refuse, uncounted.
func (r *Router) count(ctx context.Context, d *Decisions, req *jsonrpc.Request, principal string) *jsonrpc.Response {
	if !d.visible(req.Method) {
		return nil
	}
	if refusal := d.v.routedStepUp(d.access, req, d.t); refusal != nil {
		return refusal // before the answer begins: a 403 status
	}
	return r.countLimits(ctx, d, req, principal)
}

// visible reports whether d found a routed target that the caller may
// see (access.go: routedVisible).
func (d *Decisions) visible(method string) bool {
	return d.t != nil && d.rerr == nil && d.v.routedVisible(d.access, method, d.t)
}

// countLimits counts req against the vhost's limits when its method is
// rate limited (only tools/call: it is what reaches backends' work).
func (b *base) countLimits(ctx context.Context, d *Decisions, req *jsonrpc.Request, principal string) *jsonrpc.Response {
	if d.v.limits == nil || !rowOf(req.Method).RateLimited {
		return nil
	}
	return b.admit(ctx, d.v, req, principal, d.t)
}

// admit counts one tools/call of principal against every limit of the
// vhost that applies to its tool, in one store round trip.
func (b *base) admit(ctx context.Context, v *vhost, req *jsonrpc.Request, principal string, t *target) *jsonrpc.Response {
	tool := v.publishedTool(t.backend, t.name)
	var checks [4]store.RateCheck // most vhosts have few limits: no allocation
	list := checks[:0]
	var which [4]*policy.Limit
	applied := which[:0]
	var local [4]store.RateCheck // batched limits served from this instance's allowance
	handed := local[:0]
	now := time.Now()
	v.limits.Each(func(l *policy.Limit) bool {
		if !l.Applies(tool) {
			return true
		}
		c := store.RateCheck{Key: l.Counter(principal, tool), Limit: l.Limit, Window: l.Window}
		if l.Batch > 1 && v.allowance.Take(c.Key, now) {
			handed = append(handed, c)
			return true
		}
		if l.Batch > 1 {
			c.Count = l.Batch
		}
		list = append(list, c)
		applied = append(applied, l)
		return true
	})
	if len(list) == 0 {
		return nil
	}
	verdict, err := b.opts.Store.TakeRate(ctx, v.name, list)
	if err == nil && !verdict.Allowed && list[verdict.Denied].Count > 1 {
		// Near the limit a batch no longer fits: take this request alone.
		for i := range list {
			list[i].Count = 0
		}
		verdict, err = b.opts.Store.TakeRate(ctx, v.name, list)
	}
	if err != nil || !verdict.Allowed {
		for _, c := range handed { // not used: the call does not run
			v.allowance.Give(c.Key, 1, now, c.Window)
		}
	}
	if err != nil {
		return b.storeUnavailable(req.ID, err)
	}
	if verdict.Allowed {
		for _, c := range list {
			v.allowance.Give(c.Key, c.Count-1, now, c.Window) // a batch's spares
		}
	}
	obs, _ := b.opts.Observer.(PluginObserver)
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
	data, _ := json.Marshal(map[string]any{"limit": fmt.Sprintf("rate_limits[%d]", l.Index()), "retryAfterMs": wait.Milliseconds()})
	return refuse(req.ID, http.StatusTooManyRequests, wait, &jsonrpc.Error{
		Code:    CodeRateLimited,
		Message: fmt.Sprintf("rate limit exceeded: %s; retry in %ds", l.Name(), secs),
		Data:    data,
	})
}
