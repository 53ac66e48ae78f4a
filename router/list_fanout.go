package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/credentials"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/listcache"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// listOp describes one of the list methods (its row: methods.go).
type listOp struct {
	method     string // e.g. "tools/list"
	field      string // result array: "tools"
	capability string // snapshot capability (or extension) that makes a backend eligible
	uriField   string // "uri" / "uriTemplate" to prefix, or ""
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
	scans   []itemScan // each item's members renaming needs, found by decode
	next    string
	// named holds items renamed by the publishing rule, when computed
	// ahead (cached pages are renamed once, when cached).
	named []namedItem
	// hidden: the caller's access rules hide everything the backend could
	// list, so it was not asked; its position in the walk is kept.
	hidden bool
	// deferred: the backends before it in key order were expected to
	// fill the page, so it was not asked; its position is kept and the
	// walk goes on (pageWaves).
	deferred bool
	// signIn: a user_oauth backend the caller has not signed in to
	// (sign_in.go); it counts as failed.
	signIn *credentials.SignInRequired
	// pooled: the page is this request's alone (not the list cache's),
	// and the buffer its answer was read into goes back to bufpool once
	// the gateway's page is built (release).
	pooled bool
	answer upstream.AnswerBuffer
}

// release gives a page's buffer back (pooled pages only): its items,
// result and named items must not be read afterwards.
func (res *pageResult) release() {
	if res == nil || !res.pooled {
		return
	}
	res.answer.Release()
	res.items, res.scans, res.result, res.named = nil, nil, nil, nil
}

// namedItem is a list item as published downstream, with its name and
// the identifier access rules judge (the name, or for resources and
// templates the published URI or URI template).
//
// An item whose new name (and URI) only replace the values in place is
// kept as the backend sent it, with where those values lie (edit): the
// page writes it renamed (appendTo), so an uncached page copies each item
// it sends once, into the page, and renames none it does not send. Until
// then item is the backend's bytes, and read only while they are.
type namedItem struct {
	name, id string
	item     json.RawMessage
	// edit: item is the backend's; nameAt (and uriAt, when its count is
	// not 0) are replaced by name (and id) as it is written.
	edit          bool
	nameAt, uriAt span32
}

// appendTo appends the item as published to b.
func (n *namedItem) appendTo(b []byte) []byte {
	if !n.edit {
		return append(b, n.item...)
	}
	a, av, c, cv := n.nameAt, n.name, n.uriAt, n.id
	if c.count == 0 {
		b = append(b, n.item[:a.start]...)
		b = wire.AppendQuoted(b, av)
		return append(b, n.item[a.end:]...)
	}
	if c.start < a.start {
		a, av, c, cv = c, cv, a, av
	}
	b = append(b, n.item[:a.start]...)
	b = wire.AppendQuoted(b, av)
	b = append(b, n.item[a.end:c.start]...)
	b = wire.AppendQuoted(b, cv)
	return append(b, n.item[c.end:]...)
}

// size is the number of bytes appendTo writes.
func (n *namedItem) size() int {
	if !n.edit {
		return len(n.item)
	}
	size := len(n.item) - int(n.nameAt.end-n.nameAt.start) + wire.QuotedLen(n.name)
	if n.uriAt.count > 0 {
		size += wire.QuotedLen(n.id) - int(n.uriAt.end-n.uriAt.start)
	}
	return size
}

// list fans a list method out to every eligible backend concurrently and
// merges the pages. Pagination is federated: the gateway cursor carries each
// backend's own cursor (see cursor.go for the rules on resume).
func (fd *federation) list(ctx context.Context, v *vhost, c *Call, op listOp) *jsonrpc.Response {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil {
		return errorResponse(c.Request.ID, paramsError(op.method, err))
	}

	// positions: where each backend of the walk stands. A missing key
	// means "first page".
	positions := map[string]sealed.BackendCursor{}
	walkPrivate := false // an earlier page of the walk was private
	if p.Cursor != nil {
		st, err := fd.openCursor(ctx, *p.Cursor)
		if errors.Is(err, errStoreUnavailable) {
			return fd.storeUnavailable(c.Request.ID, err)
		}
		if err != nil || !st.Accepts(op.method, v.name, c.Principal) {
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

	access := c.d.access
	results := fd.pageWaves(ctx, v, c, op, access, positions)

	// A page is decorated while it is assembled, as the client reads it.
	decorate, private := c.Caller.pageFields(fd.base, v, op.method, func() envelope.Hints { return pageHints(results) }, walkPrivate)
	raw, err := fd.mergePages(ctx, v, op, c.Principal, access, positions, results, private, decorate, c.Page)
	for _, res := range results {
		res.release() // raw is a copy of what it took of them
	}
	var stranded *strandedPagesError
	switch {
	case errors.Is(err, errStoreUnavailable):
		return fd.storeUnavailable(c.Request.ID, err)
	case errors.As(err, &stranded):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%s", stranded.Error()))
	case err != nil:
		fd.log.Error("building a list result failed", "method", op.method, "vhost", v.name, "error", err)
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "building the %s result failed", op.method))
	}
	return resultResponse(c.Request.ID, raw)
}

// unseenShare: a backend whose page sizes are not known yet is expected
// to fill 1/unseenShare of a page.
const unseenShare = 8

// pageWaves asks the backends of a walk for their pages at their
// positions, in waves: a page holds at most MaxPageItems items, so a wave
// asks, in key order, only as many backends as are expected to fill it
// (each as many items as its latest page held: listcache SizeHint; a
// backend never seen is expected to fill an eighth of the page), and
// defers the rest, which keep their positions for the next page. When
// the answers fall short of the bound, the next wave asks the deferred
// backends in the same way. On a vhost of 50 backends of 200 tools a page
// thus asks about six backends, where asking all fifty would fetch,
// decode and sort 10,000 items to send 1,000 (and a fresh instance's
// first page asks eight, not fifty, for every walk under way); a vhost
// whose backends' items fit in a page asks every backend in one wave
// once their sizes are known, and up to eight at once before.
func (fd *federation) pageWaves(ctx context.Context, v *vhost, c *Call, op listOp, access policy.View, positions map[string]sealed.BackendCursor) []*pageResult {
	results := make([]*pageResult, len(v.keys))
	hits := 0 // pages from the list cache: no backend span
	// left is the items a result adds to the page: those past the
	// backend's offset into its page.
	left := func(res *pageResult) int {
		if res == nil || !res.queried || res.failed {
			return 0
		}
		return max(res.size()-positions[res.key].Offset, 0)
	}
	have := 0 // items the answers so far add, or are expected to
	todo := make([]int, 0, len(v.keys))
	for i, key := range v.keys {
		switch {
		case positions[key].Done:
			results[i] = &pageResult{key: key}
		case !v.backendVisible(access, key, op.field == "tools"):
			results[i] = &pageResult{key: key, hidden: true}
		default:
			todo = append(todo, i)
		}
	}
	for len(todo) > 0 && have < fd.opts.MaxPageItems {
		var wg sync.WaitGroup
		var wave []int
		full := false // a backend known not to fit whole waits for the next page
		rest := todo[:0]
		for _, i := range todo {
			key := v.keys[i]
			if full || have >= fd.opts.MaxPageItems {
				rest = append(rest, i)
				continue
			}
			pos := positions[key]
			p, ck := fd.cachedPage(v, c, op, key, pos.Cursor)
			if p != nil {
				results[i] = p
				hits++
				have += left(p)
				continue
			}
			if n, ok := v.lists.SizeHint(key, op.method); !ok {
				have += max(fd.opts.MaxPageItems/unseenShare, 1)
			} else if expect := max(n-pos.Offset, 1); have > 0 && have+expect > fd.opts.MaxPageItems {
				// Asked now, its page would be cut and asked for again
				// on the next page, which sends the rest: a page of
				// fewer items costs less than a page fetched twice.
				full = true
				rest = append(rest, i)
				continue
			} else {
				have += expect // not done: at least one more
			}
			wave = append(wave, i)
			wg.Go(func() { results[i] = fd.listCached(ctx, v, c, op, key, pos.Cursor, ck) })
		}
		wg.Wait()
		todo = rest
		if len(wave) == 0 {
			if full {
				break // the next page starts with it
			}
			continue // cached pages only: have is exact
		}
		for _, i := range wave {
			if res := results[i]; res.queried && !res.failed {
				v.lists.NoteSize(res.key, op.method, res.size())
			}
		}
		have = 0
		for _, res := range results {
			have += left(res)
		}
	}
	for _, i := range todo {
		results[i] = &pageResult{key: v.keys[i], deferred: true}
	}
	fd.annotateCacheHits(ctx, hits)
	return results
}

// pageHints are the caching hints of a merged page: the shortest lifetime
// of the pages it was made of, private if any was (a failed backend's
// absence is not cached for long either: its ttlMs counts as 0).
func pageHints(results []*pageResult) envelope.Hints {
	h, seen := envelope.Hints{}, false
	for _, res := range results {
		switch {
		case res == nil || !res.queried:
			continue
		case res.signIn != nil:
			return envelope.Hints{Private: true} // its _meta holds the caller's link
		case res.failed || res.result == nil:
			return envelope.Hints{}
		case !seen:
			h, seen = envelope.HintsOf(res.result), true
		default:
			h = h.Merge(envelope.HintsOf(res.result))
		}
	}
	return h
}

// listOne fetches one page from one backend. A pooled page is the
// caller's alone and is read into a buffer lent for it, given back by
// pageResult.release; a page others may share (the list cache's) is not.
func (fd *federation) listOne(ctx context.Context, v *vhost, c *Call, op listOp, key, cursor string, pooled bool) *pageResult {
	res := &pageResult{key: key, pooled: pooled}
	fd.fetchPage(ctx, res, v, c, op, cursor)
	return res
}

// fetchPage asks res's backend for the page at cursor and decodes it
// into res.
func (fd *federation) fetchPage(ctx context.Context, res *pageResult, v *vhost, c *Call, op listOp, cursor string) {
	key := res.key
	if res.signIn = fd.link.signInNeeded(ctx, v, key); res.signIn != nil {
		res.queried, res.failed = true, true
		return
	}
	snap := c.peer.backends[key]
	if snap.OK() && !capability.Has(snap, op.capability) {
		return
	}
	if !snap.OK() && !fd.link.reprobeDue(snap) {
		res.queried, res.failed = true, true
		return
	}
	res.queried = true
	var params json.RawMessage
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	// The page is decoded, and checked, as the answer is read
	// (upstream.CallOptions.ResultCheck): walked is the result that walk took.
	expect, _ := v.lists.SizeHint(key, op.method)
	var walked json.RawMessage
	check := func(data []byte, i int) int {
		end := res.decodeAt(data, i, op, expect)
		if end >= 0 {
			walked = data[i:end]
		}
		return end
	}
	var lacks bool
	resp, err := fd.link.withBackend(ctx, v, key, op.method, c.peer, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		if init := conn.Init(); init != nil && !snap.OK() && !capability.Has(snapshotFrom(key, init), op.capability) {
			lacks = true // re-probed just now: it does not have this list
			return &jsonrpc.Response{}, nil
		}
		opts := upstream.CallOptions{ResultCheck: check}
		if res.pooled {
			opts.Answer = &res.answer
		}
		return conn.CallWith(ctx, op.method, params, nil, opts)
	})
	if lacks {
		res.queried = false
		return
	}
	if err != nil || resp.Error != nil {
		if err == nil {
			err = resp.Error
		}
		fd.log.Warn("backend skipped", "method", op.method, "vhost", v.name, "backend", key, "error", err)
		res.failed = true
		return
	}
	// Not the result walked (none was, or another answer was: a retried
	// call's first one): decoded now.
	if !sameBytes(walked, resp.Result) && !res.decode(resp.Result, op, expect) {
		res.failed = true
	}
}

// maxExpectedItems bounds the items a page's decode makes room for
// ahead (decode's expect): 8,192 items is 416 kB of room.
const maxExpectedItems = 8192

// size is the number of items of the page.
func (res *pageResult) size() int {
	if res.items == nil && res.named != nil {
		return len(res.named) // dropRaw
	}
	return len(res.items)
}

// dropRaw lets a cached page of a multi-backend vhost, renamed, go of
// the backend's answer: its renamed items are copies, and of the rest
// only the small members (cache hints, the cursor) are read again. A
// cached page then holds its items once, not twice (a 200-tool page:
// about 150 kB less, for as long as the entry lives).
func (res *pageResult) dropRaw(op listOp) {
	small := make(map[string]json.RawMessage, len(res.result))
	for k, v := range res.result {
		if k != op.field {
			small[k] = bytes.Clone(v)
		}
	}
	res.result, res.items, res.scans = small, nil, nil
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// decode reads a backend's list result into res: its members, its items,
// what renaming needs of each item (itemScan) and its next cursor, in one
// pass that also checks the result is valid JSON, as strictly as
// encoding/json (wire.ValidMembersElementMembers: the items, and their
// members, are found while the array is crossed). An item array or cursor
// of another type reads as none, as encoding/json's would; a result that
// is not an object, or not valid, fails. expect is how many items the
// backend's latest page held (0: unknown). What an earlier decode of res
// found is replaced.
func (res *pageResult) decode(result json.RawMessage, op listOp, expect int) bool {
	fn, member, elem := res.walker(op, expect)
	return wire.ValidMembersElementMembers(result, 1, op.field, fn, member, elem)
}

// decodeAt is decode of the result starting at data[i] (a backend's
// whole answer, as upstream.CallOptions.ResultCheck hands it over): the index
// just past it, or -1.
func (res *pageResult) decodeAt(data []byte, i int, op listOp, expect int) int {
	fn, member, elem := res.walker(op, expect)
	return wire.ValidMembersElementMembersAt(data, i, 1, op.field, fn, member, elem)
}

// walker is what decode's walk calls back: with each member of the
// result, each member of an item, and each item.
func (res *pageResult) walker(op listOp, expect int) (fn func(string, []byte), member func([]byte, int, int), elem func([]byte)) {
	res.result, res.items, res.scans, res.next = map[string]json.RawMessage{}, nil, nil, ""
	// The latest array's, until its member is seen; sized for the items
	// the backend's latest page held, so that they are not grown by
	// doubling, copied at every step.
	// (At most maxExpectedItems: one huge page does not size every later
	// one.)
	n := min(expect, maxExpectedItems)
	items := make([]json.RawMessage, 0, n)
	scans := make([]itemScan, 0, n)
	var scan itemScan // the element being crossed
	fn = func(k string, v []byte) {
		res.result[k] = v
		switch k {
		case op.field:
			res.items, items = items, nil // nil when not an array
			res.scans, scans = scans, nil
			if len(res.items) == 0 {
				res.items, res.scans = nil, nil // as for none
			}
		case "nextCursor":
			res.next, _ = wire.String(v)
		}
	}
	member = func(k []byte, start, end int) { scan.member(op, k, start, end) }
	elem = func(item []byte) {
		items = append(items, item)
		scan.scanned = len(item) > 0 && item[0] == '{'
		scans = append(scans, scan)
		scan = itemScan{}
	}
	return fn, member, elem
}

// List pages of a backend with list_cache (package router/listcache says
// what is shared and when it is dropped): looked up before the fan-out,
// fetched once for concurrent misses, dropped on every instance when the
// backend announces a list change.

// A backend may opt in to a short per-instance cache of its list pages
// (list_cache in the config; package router/listcache says what is
// shared and when it is dropped). These are the router's uses of it.

// cachedPage looks the backend's page up in its list cache: a hit costs
// no goroutine. ck is the page's cache key, "" when the backend's pages
// are not cached; listCached takes it on a miss.
func (fd *federation) cachedPage(v *vhost, c *Call, op listOp, key, cursor string) (p *pageResult, ck string) {
	b := v.backends[key]
	if b.ListCacheTTL <= 0 || !c.peer.backends[key].OK() {
		return nil, ""
	}
	ck = listcache.Key(b.Key, op.method, cursor, b.PassthroughHeaders, c.Header)
	p, _ = v.lists.Lookup(ck)
	if h := v.health[key]; p != nil {
		h.cacheHits.Add(1)
	} else {
		h.cacheMisses.Add(1)
	}
	if o, ok := fd.opts.Observer.(ListCacheObserver); ok {
		o.ListCacheLookup(v.name, key, p != nil)
	}
	return p, ck
}

// listCached is listOne through the backend's list cache under key ck
// (from cachedPage; "" for a backend without one).
func (fd *federation) listCached(ctx context.Context, v *vhost, c *Call, op listOp, key, cursor, ck string) *pageResult {
	if ck == "" {
		return fd.listOne(ctx, v, c, op, key, cursor, true) // this request's alone
	}
	return v.lists.Page(ck, key, v.backends[key].ListCacheTTL, func() (*pageResult, bool) {
		// Shared by every caller waiting on this key: not cancelled by
		// the first one leaving (the backend timeout still bounds it).
		p := fd.listOne(context.WithoutCancel(ctx), v, c, op, key, cursor, false)
		if p.queried && !p.failed {
			// Rename once for every request the entry serves; a page
			// that cannot be renamed is left to fail in the merge.
			p.named, _ = fd.renameAll(v, op, key, p.items, p.scans, true)
			if p.named != nil && !v.single() {
				p.dropRaw(op)
			}
		}
		return p, p.queried && !p.failed
	})
}

// keepsLists reports whether the instance keeps what backend key lists
// (its list cache, or tool search's index): a list change it announces
// must then be passed on (listChanged).
func (v *vhost) keepsLists(key string) bool {
	return v.backends[key].ListCacheTTL > 0 || v.search != nil
}

// listChange reports whether method is a backend's announcement that one
// of its lists changed.
func listChange(method string) bool { return wire.NotificationOf(method).ListChanged != "" }

// listChanged drops a backend's cached pages on every instance: a
// listener of this instance saw it announce a list change.
func (fd *federation) listChanged(ctx context.Context, vhostName, key string) {
	fd.dropListCache(vhostName, key)
	if err := fd.opts.Store.Publish(ctx, storeListChanged(vhostName, key)); err != nil {
		fd.log.Warn("publishing a list change failed", "error", err)
	}
}

func storeListChanged(vhostName, key string) store.BusMessage {
	return store.BusMessage{Kind: store.BusListChanged, ID: vhostName + "/" + key}
}

func (fd *federation) dropListCache(vhostName, key string) {
	if v, ok := fd.table.Load().vhosts[vhostName]; ok {
		v.lists.Invalidate(key)
		if h := v.health[key]; h != nil {
			h.cacheDropped.Store(time.Now().UnixNano())
		}
		v.schemas.invalidate(key)
		v.recheckPatterns()
	}
}
