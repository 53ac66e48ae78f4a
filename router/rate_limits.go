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
// the limit, and HTTP 429 with Retry-After: the transport asks Admit
// before it begins an event stream, so the status can still
// be set. Only tools/call counts: it is what reaches backends' work, the
// thing operators limit; lists are cheap and cacheable.

// RateLimits reports whether virtual host vhost has rate limits: whether
// Admit may need the store.
func (r *Router) RateLimits(vhost string) bool {
	v, ok := r.table.Load().vhosts[vhost]
	return ok && v.limits != nil
}

// Admit counts a request against its virtual host's rate limits, before
// its answer begins: a refusal is answered with HTTP 429 (RateLimited),
// which an answer already streaming could not carry. It returns nil when
// the request may go on; Handle then does not count it again. Requests
// that are not tools/call, or name no visible tool, pass (Handle answers
// them). It needs the request's VHost, Principal and, for a 2025-era
// request, nothing of its session: the transport may ask it while the
// session loads.
func (r *Router) Admit(ctx context.Context, c *Call) *jsonrpc.Response {
	c.normalize()
	v, ok := r.table.Load().vhosts[c.VHost]
	if !ok || !c.Request.IsCall() {
		return nil
	}
	if c.Modern != nil {
		return r.admitModern(ctx, v, c)
	}
	if c.admitted || v.limits == nil || c.Request.Method != "tools/call" {
		return nil
	}
	t, rerr := r.targetOf(v, c)
	if rerr != nil || !v.routedVisible(r.accessFor(v, c), c.Request.Method, t) {
		return nil
	}
	return r.admit(ctx, v, c.Request, c.Principal, t, &c.admitted)
}

func (r *Router) admitModern(ctx context.Context, v *vhost, c *Call) *jsonrpc.Response {
	if c.admitted || v.limits == nil || c.Request.Method != "tools/call" || !c.Request.IsCall() {
		return nil
	}
	t, rerr := r.targetOf(v, c)
	if rerr != nil {
		return nil
	}
	if a := modernAccess(v, c); a != nil && !v.routedVisible(*a, c.Request.Method, t) {
		return nil
	}
	return r.admit(ctx, v, c.Request, c.Principal, t, &c.admitted)
}

// modernAccess returns a modern request's access decision (nil: the vhost
// has no rules), deciding it on first use.
func modernAccess(v *vhost, c *Call) *policy.View {
	if v.access == nil {
		return nil
	}
	if c.access == nil || c.access.Policy() != v.access {
		a := v.access.Decide(v.name, c.Claims)
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
	return r.admit(ctx, v, c.Request, c.Principal, t, &c.admitted)
}

// admit counts one tools/call of principal against every limit of the
// vhost that applies to its tool, in one store round trip.
func (r *Router) admit(ctx context.Context, v *vhost, req *jsonrpc.Request, principal string, t *target, admitted *bool) *jsonrpc.Response {
	*admitted = true
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
			v.allowance.Give(c.Key, 1, now, c.Window)
		}
	}
	if err != nil {
		return r.storeUnavailable(req.ID, err)
	}
	if verdict.Allowed {
		for _, c := range list {
			v.allowance.Give(c.Key, c.Count-1, now, c.Window) // a batch's spares
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
	data, _ := json.Marshal(map[string]any{"limit": fmt.Sprintf("rate_limits[%d]", l.Index()), "retryAfterMs": wait.Milliseconds()})
	return refuse(req.ID, http.StatusTooManyRequests, wait, &jsonrpc.Error{
		Code:    CodeRateLimited,
		Message: fmt.Sprintf("rate limit exceeded: %s; retry in %ds", l.Name(), secs),
		Data:    data,
	})
}
