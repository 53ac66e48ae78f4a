package router

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// listOp describes one of the four list methods.
type listOp struct {
	method     string // e.g. "tools/list"
	field      string // result array: "tools"
	capability string // snapshot capability that makes a backend eligible
	uriField   string // "uri" / "uriTemplate" to prefix, or ""
}

var listOps = map[string]listOp{
	"tools/list":               {"tools/list", "tools", "tools", ""},
	"resources/list":           {"resources/list", "resources", "resources", "uri"},
	"prompts/list":             {"prompts/list", "prompts", "prompts", ""},
	"resources/templates/list": {"resources/templates/list", "resourceTemplates", "resources", "uriTemplate"},
}

// MetaSkippedBackends is the result _meta key naming backends that were
// skipped because they failed or were unreachable.
const MetaSkippedBackends = "mcpgw/skippedBackends"

// pageResult is one backend's answer to one list page.
type pageResult struct {
	key     string
	queried bool // false: backend lacks the capability, or was not due
	failed  bool
	result  map[string]json.RawMessage
	items   []json.RawMessage
	next    string
	// named holds items renamed by the publishing rule, when computed
	// ahead (cached pages are renamed once, when cached).
	named []namedItem
	// hidden: the caller's access rules hide everything the backend could
	// list, so it was not asked; its position in the walk is kept.
	hidden bool
	// signIn: a user_oauth backend the caller has not signed in to
	// (sign_in.go); it counts as failed.
	signIn *credentials.SignInRequired
}

// namedItem is a list item as published downstream, with its name and
// the identifier access rules judge (the name, or for resources and
// templates the published URI or URI template).
type namedItem struct {
	name, id string
	item     json.RawMessage
}

// list fans a list method out to every eligible backend concurrently and
// merges the pages. Pagination is federated: the gateway cursor carries each
// backend's own cursor (see cursor.go for the rules on resume).
func (r *Router) list(ctx context.Context, v *vhost, c *Call, op listOp) *jsonrpc.Response {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil {
		return errorResponse(c.Request.ID, paramsError(op.method, err))
	}

	// positions: where each backend of the walk stands. A missing key
	// means "first page".
	positions := map[string]backendCursor{}
	walkPrivate := false // an earlier page of the walk was private
	if p.Cursor != nil {
		st, err := r.openCursor(ctx, *p.Cursor)
		if errors.Is(err, errStoreUnavailable) {
			return r.storeUnavailable(c.Request.ID, err)
		}
		if err != nil || !st.accepts(op.method, v.name, c.Session.Principal) {
			return errorResponse(c.Request.ID, invalidParams("invalid cursor for %s on this virtual host", op.method))
		}
		walkPrivate = st.Private
		// Keys no longer configured are dropped; new ones start at page one.
		for k, bc := range st.Backends {
			if _, ok := v.backends[k]; ok {
				positions[k] = bc
			}
		}
	}

	access := r.accessFor(v, c)
	results := make([]*pageResult, len(v.keys))
	hits := 0 // pages from the list cache: no backend span
	var wg sync.WaitGroup
	for i, key := range v.keys {
		pos := positions[key]
		if pos.Done {
			results[i] = &pageResult{key: key}
			continue
		}
		if !access.backendVisible(v, key, op.field == "tools") {
			results[i] = &pageResult{key: key, hidden: true}
			continue
		}
		p, ck := r.cachedPage(v, c, op, key, pos.Cursor)
		if p != nil {
			results[i] = p
			hits++
			continue
		}
		wg.Go(func() { results[i] = r.listCached(ctx, v, c, op, key, pos.Cursor, ck) })
	}
	wg.Wait()
	r.annotateCacheHits(ctx, hits)

	// A 2026-07-28 page is decorated while it is assembled (decorateFields).
	var decorate func(map[string]json.RawMessage)
	private := walkPrivate
	if c.modern {
		h := pageHints(results)
		h.private = h.private || walkPrivate
		hints := v.accessHints(op.method, &h)
		private = hints.private
		decorate = func(m map[string]json.RawMessage) { r.decorateFields(m, hints) }
	}
	raw, err := r.mergePages(ctx, v, op, c.Session.Principal, access, positions, results, private, decorate)
	var stranded *strandedPagesError
	switch {
	case errors.Is(err, errStoreUnavailable):
		return r.storeUnavailable(c.Request.ID, err)
	case errors.As(err, &stranded):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%s", stranded.Error()))
	case err != nil:
		r.log.Error("building a list result failed", "method", op.method, "vhost", v.name, "error", err)
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "building the %s result failed", op.method))
	}
	c.decorated = c.modern
	return resultResponse(c.Request.ID, raw)
}

// pageHints are the caching hints of a merged page: the shortest lifetime
// of the pages it was made of, private if any was (a failed backend's
// absence is not cached for long either: its ttlMs counts as 0).
func pageHints(results []*pageResult) cacheHints {
	h, seen := cacheHints{}, false
	for _, res := range results {
		switch {
		case res == nil || !res.queried:
			continue
		case res.signIn != nil:
			return cacheHints{private: true} // its _meta holds the caller's link
		case res.failed || res.result == nil:
			return cacheHints{}
		case !seen:
			h, seen = hintsOf(res.result), true
		default:
			h = h.merge(hintsOf(res.result))
		}
	}
	return h
}

// listOne fetches one page from one backend.
func (r *Router) listOne(ctx context.Context, v *vhost, c *Call, op listOp, key, cursor string) *pageResult {
	res := &pageResult{key: key}
	if res.signIn = r.signInNeeded(ctx, v, key); res.signIn != nil {
		res.queried, res.failed = true, true
		return res
	}
	snap := c.Session.Backends[key]
	if snap.OK() && !has(snap, op.capability) {
		return res
	}
	if !snap.OK() && !r.reprobeDue(snap) {
		res.queried, res.failed = true, true
		return res
	}
	res.queried = true
	var params json.RawMessage
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	var lacks bool
	resp, err := r.withBackend(ctx, v, key, op.method, c.Session, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		if init := conn.Init(); init != nil && !snap.OK() && !has(snapshotFrom(key, init), op.capability) {
			lacks = true // re-probed just now: it does not have this list
			return &jsonrpc.Response{}, nil
		}
		return conn.Call(ctx, op.method, params, nil)
	})
	if lacks {
		res.queried = false
		return res
	}
	if err != nil || resp.Error != nil {
		if err == nil {
			err = resp.Error
		}
		r.log.Warn("backend skipped", "method", op.method, "vhost", v.name, "backend", key, "error", err)
		res.failed = true
		return res
	}
	if err := json.Unmarshal(resp.Result, &res.result); err != nil {
		res.failed = true
		return res
	}
	_ = json.Unmarshal(res.result[op.field], &res.items)
	_ = json.Unmarshal(res.result["nextCursor"], &res.next)
	return res
}
