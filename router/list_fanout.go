package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/capability"
	"github.com/mcpgw/gateway/router/envelope"
	federated "github.com/mcpgw/gateway/router/federation"
	"github.com/mcpgw/gateway/router/listcache"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// A list page is built by package router/federation (which backends to
// ask and in what waves, the merge, the next cursor); this file is the
// router's side of it: the request's cursor and errors, and the vhost's
// backends as the caller reaches them (listSource: the backend link,
// sign-in, snapshots, the list cache), and the keys cursors are signed
// with. The package is imported as
// federated: federation is the name of the router's part.

// MetaSkippedBackends is the result _meta key naming backends that were
// skipped because they failed or were unreachable.
const MetaSkippedBackends = federated.MetaSkippedBackends

// PageBuffer is a buffer lent to one request for its list page
// (LendPageBuffer, Call.Page).
type PageBuffer = federated.PageBuffer

// LendPageBuffer lends a buffer for the list page a request may build
// (Call.Page). The page a list request answers with is then that buffer's
// bytes: release gives it back, and must be called only once the
// response has been written and nothing reads its result any more.
func LendPageBuffer() (_ *PageBuffer, release func()) { return federated.LendPageBuffer() }

// list fans a list method out to the eligible backends and merges the
// pages. Pagination is federated: the gateway cursor carries each
// backend's own cursor (package router/sealed says what it holds).
func (fd *federation) list(ctx context.Context, v *vhost, c *Call, op federated.Op) *jsonrpc.Response {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := json.Unmarshal(orEmpty(c.Request.Params), &p); err != nil {
		return errorResponse(c.Request.ID, paramsError(op.Method, err))
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
		if err != nil || !st.Accepts(op.Method, v.name, c.Principal) {
			return errorResponse(c.Request.ID, invalidParams("invalid cursor for %s on this virtual host", op.Method))
		}
		walkPrivate = st.Private
		// Keys no longer configured are dropped; new ones start at page one.
		for k, bc := range st.Backends {
			if _, ok := v.backends[k]; ok {
				positions[k] = bc
			}
		}
	}

	src := &listSource{fd: fd, v: v, c: c, List: federated.List{Op: op, VHost: v.name, Principal: c.Principal,
		Keys: v.keys, Naming: fd.naming(v), Access: c.d.access, Lead: v.search.lead(op, len(positions) == 0),
		Positions: positions, MaxItems: fd.opts.MaxPageItems}}
	if v.search != nil && op.Field == "tools" {
		src.Listed = v.search.listed // tool_search.go
	}
	l := &src.List
	pages, hits := l.Waves(ctx, src)
	fd.annotateCacheHits(ctx, hits)

	// A page is decorated while it is assembled, as the client reads it.
	decorate, private := c.Caller.pageFields(fd.base, v, op.Method, func() envelope.Hints { return federated.Hints(pages) }, walkPrivate)
	raw, err := l.Merge(ctx, src, pages, private, decorate, c.Page)
	for _, p := range pages {
		p.Release() // raw is a copy of what it took of them
	}
	var stranded *federated.StrandedPagesError
	switch {
	case errors.Is(err, errStoreUnavailable):
		return fd.storeUnavailable(c.Request.ID, err)
	case errors.As(err, &stranded):
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "%s", stranded.Error()))
	case err != nil:
		fd.log.Error("building a list result failed", "method", op.Method, "vhost", v.name, "error", err)
		return errorResponse(c.Request.ID, rpcError(CodeInternalError, "building the %s result failed", op.Method))
	}
	return resultResponse(c.Request.ID, raw)
}

// naming is v's publishing rule for list items, with the tools the
// gateway runs as tasks marked (tasks_run.go).
func (fd *federation) naming(v *vhost) federated.Naming {
	nm := v.naming()
	if fd.opts.Tasks != nil {
		nm.Tasks = func(op federated.Op, key string) func(json.RawMessage) json.RawMessage {
			tasks := fd.taskPolicy(v, op, key)
			if tasks == nil {
				return nil
			}
			return func(item json.RawMessage) json.RawMessage { return withTaskSupport(tasks, item) }
		}
	}
	return nm
}

// naming is v's publishing rule without fd.naming's task marks: all that
// publishing one item (Naming.RenameItem) reads.
func (v *vhost) naming() federated.Naming {
	return federated.Naming{Single: v.single(), Aliases: v.aliases}
}

// listSource is one list request: its page (federated.List), and its
// way to the vhost's backends, the router's side of federated.Source
// (one allocation for both).
type listSource struct {
	federated.List
	fd *federation
	v  *vhost
	c  *Call
}

func (s *listSource) Visible(key string) bool {
	return s.v.backendVisible(s.Access, key, s.Op.Field == "tools")
}

func (s *listSource) SizeHint(key string) (int, bool) { return s.v.lists.SizeHint(key, s.Op.Method) }

func (s *listSource) NoteSize(key string, n int) { s.v.lists.NoteSize(key, s.Op.Method, n) }

// Seal signs the next cursor with the cursor key (cursorKey, below): an
// error wraps errStoreUnavailable.
func (s *listSource) Seal(ctx context.Context, next *sealed.Cursor) (string, error) {
	key, err := s.fd.cursorKey(ctx)
	if err != nil {
		return "", err
	}
	return sealed.SealCursor(key, next)
}

// Pagination cursors are signed with cursor_secret_env, or else with a key
// shared through the store that every instance agrees on (sealed.Key).

// cursorKeyName names the cursor key in the store.
const cursorKeyName = "cursor"

// cursorKey returns the key to sign a new cursor with. An error wraps
// errStoreUnavailable: the store could not be read.
func (fd *federation) cursorKey(ctx context.Context) ([]byte, error) {
	key, err := fd.cursorKeys.Sign(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: cursor key: %w", errStoreUnavailable, err)
	}
	return key, nil
}

// openCursor verifies and decodes a client's cursor: sealed.ErrBadCursor when no
// key it may have been signed with accepts it, an error wrapping
// errStoreUnavailable when that took a store read that failed.
func (fd *federation) openCursor(ctx context.Context, token string) (*sealed.Cursor, error) {
	var st *sealed.Cursor
	ok, err := fd.cursorKeys.Verify(ctx, func(key []byte) bool {
		var err error
		st, err = sealed.OpenCursor(key, token)
		return err == nil
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: cursor key: %w", errStoreUnavailable, err)
	case !ok:
		return nil, sealed.ErrBadCursor
	}
	return st, nil
}

// listOne fetches one page from one backend. A pooled page is the
// caller's alone and is read into a buffer lent for it, given back by
// Page.Release; a page others may share (the list cache's) is not.
func (fd *federation) listOne(ctx context.Context, v *vhost, c *Call, op federated.Op, key, cursor string, pooled bool) *federated.Page {
	res := &federated.Page{Key: key, Pooled: pooled}
	fd.fetchPage(ctx, res, v, c, op, cursor)
	return res
}

// fetchPage asks res's backend for the page at cursor and decodes it
// into res.
func (fd *federation) fetchPage(ctx context.Context, res *federated.Page, v *vhost, c *Call, op federated.Op, cursor string) {
	key := res.Key
	if res.SignIn = fd.link.signInNeeded(ctx, v, key); res.SignIn != nil {
		res.Queried, res.Failed = true, true
		return
	}
	snap := c.peer.backends[key]
	if snap.OK() && !capability.Has(snap, op.Capability) {
		return
	}
	if !snap.OK() && !fd.link.reprobeDue(snap) {
		res.Queried, res.Failed = true, true
		return
	}
	res.Queried = true
	var params json.RawMessage
	if cursor != "" {
		params, _ = json.Marshal(map[string]string{"cursor": cursor})
	}
	// The page is decoded, and checked, as the answer is read
	// (upstream.CallOptions.ResultCheck): walked is the result that walk took.
	expect, _ := v.lists.SizeHint(key, op.Method)
	var walked json.RawMessage
	check := func(data []byte, i int) int {
		end := res.DecodeAt(data, i, op, expect)
		if end >= 0 {
			walked = data[i:end]
		}
		return end
	}
	var lacks bool
	resp, err := fd.link.withBackend(ctx, v, key, op.Method, c.peer, c.Header, func(conn *upstream.Conn) (*jsonrpc.Response, error) {
		if init := conn.Init(); init != nil && !snap.OK() && !capability.Has(snapshotFrom(key, init), op.Capability) {
			lacks = true // re-probed just now: it does not have this list
			return &jsonrpc.Response{}, nil
		}
		opts := upstream.CallOptions{ResultCheck: check}
		if res.Pooled {
			opts.Answer = &res.Answer
		}
		return conn.CallWith(ctx, op.Method, params, nil, opts)
	})
	if lacks {
		res.Queried = false
		return
	}
	if err != nil || resp.Error != nil {
		if err == nil {
			err = resp.Error
		}
		fd.log.Warn("backend skipped", "method", op.Method, "vhost", v.name, "backend", key, "error", err)
		res.Failed = true
		return
	}
	// Not the result walked (none was, or another answer was: a retried
	// call's first one): decoded now.
	if !sameBytes(walked, resp.Result) && !res.Decode(resp.Result, op, expect) {
		res.Failed = true
	}
}

// sameBytes reports whether a and b are the same bytes in memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// A backend may opt in to a short per-instance cache of its list pages
// (list_cache in the config; package router/listcache says what is
// shared and when it is dropped): looked up before the fan-out, fetched
// once for concurrent misses, dropped on every instance when the backend
// announces a list change. These are the router's uses of it.

// Cached looks the backend's page up in its list cache: a hit costs no
// goroutine. ck is the page's cache key, "" when the backend's pages are
// not cached; Fetch takes it on a miss.
func (s *listSource) Cached(key, cursor string) (p *federated.Page, ck string) {
	v, c := s.v, s.c
	b := v.backends[key]
	if b.ListCacheTTL <= 0 || !c.peer.backends[key].OK() {
		return nil, ""
	}
	ck = listcache.Key(b.Key, s.Op.Method, cursor, b.PassthroughHeaders, c.Header)
	p, _ = v.lists.Lookup(ck)
	if h := v.health[key]; p != nil {
		h.cacheHits.Add(1)
	} else {
		h.cacheMisses.Add(1)
	}
	if o, ok := s.fd.opts.Observer.(ListCacheObserver); ok {
		o.ListCacheLookup(v.name, key, p != nil)
	}
	return p, ck
}

// Fetch is listOne through the backend's list cache under key ck (from
// Cached; "" for a backend without one).
func (s *listSource) Fetch(ctx context.Context, key, cursor, ck string) *federated.Page {
	fd, v, c, op := s.fd, s.v, s.c, s.Op
	if ck == "" {
		return fd.listOne(ctx, v, c, op, key, cursor, true) // this request's alone
	}
	return v.lists.Page(ck, key, v.backends[key].ListCacheTTL, func() (*federated.Page, bool) {
		// Shared by every caller waiting on this key: not cancelled by
		// the first one leaving (the backend timeout still bounds it).
		p := fd.listOne(context.WithoutCancel(ctx), v, c, op, key, cursor, false)
		if p.Queried && !p.Failed {
			// Rename once for every request the entry serves; a page
			// that cannot be renamed is left to fail in the merge.
			p.Named, _ = fd.naming(v).RenameAll(op, key, p.Items, p.Scans, true)
			if p.Named != nil && !v.single() {
				p.DropRaw(op)
			}
		}
		return p, p.Queried && !p.Failed
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
