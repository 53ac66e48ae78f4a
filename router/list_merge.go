package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/naming"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/sealed"
)

// mergePages builds the downstream list result from one page of every
// backend: items renamed by the prefix/alias rule, sorted by name (ties by
// backend key), the next gateway cursor, and _meta naming skipped backends.
// Items the request's access rules hide are left out here, per request,
// after the list cache: a page may come out shorter, or empty with a
// cursor, and the walk goes on. A backend hidden whole keeps its position
// and holds no pages of this walk.
//
// decorate, when set, adds a 2026-07-28 page's own fields before the page
// is encoded. lent, when set, is the buffer the page is written in.
//
// A single-backend vhost passes names through unchanged and keeps the
// backend's own order and result fields; only nextCursor is replaced by a
// gateway cursor, so that cursors are uniform across vhosts.
func (fd *federation) mergePages(ctx context.Context, v *vhost, op listOp, principal string, access policy.View, positions map[string]sealed.BackendCursor, results []*pageResult, private bool, decorate func(map[string]json.RawMessage), lent *PageBuffer) (json.RawMessage, error) {
	m := &pageMerge{v: v, op: op, positions: positions, results: results,
		lists: make([][]namedItem, len(results)), pageNext: map[string]string{}, left: map[string]int{},
		next: &sealed.Cursor{Op: op.method, VHost: v.name, Principal: sealed.PrincipalTag(principal), Backends: map[string]sealed.BackendCursor{}, Private: private}}
	if err := m.collect(fd, access); err != nil {
		return nil, err
	}
	m.sort()
	cut, sent := m.bound(fd.opts.MaxPageItems)
	m.advance(cut)
	out := m.fields()
	lead := v.search.lead(op, len(positions) == 0) // tool_search.go: the gateway's tools
	items, size := make([]*namedItem, 0, len(lead)+sent), 0
	for _, it := range lead {
		items = append(items, it)
		size += it.size()
	}
	for _, e := range m.entries[:cut] {
		if e.visible {
			it := &m.lists[e.res][e.idx]
			items = append(items, it)
			size += it.size()
		}
	}
	if err := fd.pageCursor(ctx, m, out); err != nil {
		return nil, err
	}
	if decorate != nil {
		decorate(out)
	}
	appendItem := func(b []byte, i int) []byte { return items[i].appendTo(b) }
	pb := lent.take()
	if pb == nil {
		return wire.AppendRawObjectArrayFunc(nil, out, op.field, len(items), size, appendItem), nil
	}
	pb.b = wire.AppendRawObjectArrayFunc(pb.b[:0], out, op.field, len(items), size, appendItem)
	return pb.b, nil
}

// pageMerge is one list page being merged from the backends' pages.
type pageMerge struct {
	v         *vhost
	op        listOp
	positions map[string]sealed.BackendCursor
	results   []*pageResult
	entries   []pageEntry
	lists     [][]namedItem // each result's named items
	next      *sealed.Cursor
	more      bool
	pageNext  map[string]string // each listed backend's own next cursor
	left      map[string]int    // each listed backend's items on this page, past its offset
	skipped   []string
	stranded  []string
}

// A pageEntry is an item's place (its result's, and its own in that
// result's named items): no pointers, so the page's few thousand entries
// are one block the collector does not scan.
type pageEntry struct {
	res, idx int32
	visible  bool // hidden items hold their place in the walk, unsent
}

func (m *pageMerge) byName(a, b pageEntry) int {
	return strings.Compare(m.lists[a.res][a.idx].name, m.lists[b.res][b.idx].name)
}

// collect takes each result's items past its offset into the entries,
// and notes the backends that hold no items on this page.
func (m *pageMerge) collect(r *federation, access policy.View) error {
	total := 0
	for _, res := range m.results {
		if res != nil && res.queried && !res.failed {
			total += res.size()
		}
	}
	m.entries = make([]pageEntry, 0, total)
	for ri, res := range m.results {
		if res == nil || !m.listed(res) {
			continue
		}
		named := res.named
		if named == nil {
			// Renamed as the page is written: the items stay the
			// backend's bytes until then.
			var err error
			if named, err = r.renameAll(m.v, m.op, res.key, res.items, res.scans, false); err != nil {
				return err
			}
		}
		m.lists[ri] = named
		from := len(m.entries)
		for i, n := range named {
			m.entries = append(m.entries, pageEntry{res: int32(ri), idx: int32(i), visible: access.Listed(n.id) && (m.op.field != "tools" || m.v.search.listed(&named[i]))})
		}
		own := m.entries[from:]
		if !m.v.single() {
			// In the merged order, so that what one page takes of this
			// backend's page is a prefix of it (pageBound).
			slices.SortStableFunc(own, m.byName)
		}
		skip := min(m.positions[res.key].Offset, len(own))
		m.entries = append(m.entries[:from], own[skip:]...)
		m.pageNext[res.key], m.left[res.key] = res.next, len(own)-skip
	}
	return nil
}

// listed reports whether res has items on this page (true); when it has
// none it records where its walk stands instead.
func (m *pageMerge) listed(res *pageResult) bool {
	switch {
	case res.hidden:
		if pos, ok := m.positions[res.key]; ok {
			m.next.Backends[res.key] = pos
		}
		return false
	case res.deferred:
		// Not asked for this page (pageWaves): it holds items still.
		if pos, ok := m.positions[res.key]; ok {
			m.next.Backends[res.key] = pos
		}
		m.more = true
		return false
	case !res.queried:
		m.next.Backends[res.key] = sealed.BackendCursor{Done: true}
		return false
	case res.failed:
		m.skipped = append(m.skipped, res.key)
		// A failed backend keeps its position, so a later page retries it.
		m.next.Backends[res.key] = m.positions[res.key]
		if m.positions[res.key].Cursor != "" {
			m.stranded = append(m.stranded, res.key) // mid-walk: it holds pages
		}
		return false
	}
	return true
}

// sort puts a merged page in name order, ties by backend key.
func (m *pageMerge) sort() {
	if m.v.single() {
		return
	}
	slices.SortStableFunc(m.entries, func(a, b pageEntry) int {
		if c := m.byName(a, b); c != 0 {
			return c
		}
		return strings.Compare(m.results[a.res].key, m.results[b.res].key)
	})
}

// bound cuts the page at maxItems visible items: past the bound, the rest
// of each backend's page waits for the next gateway page, which asks the
// backend for the same page again and skips what was sent
// (backendCursor.Offset). A page holds at most MaxPageItems items,
// whatever the number of backends.
func (m *pageMerge) bound(maxItems int) (cut, sent int) {
	cut = len(m.entries)
	for i, e := range m.entries {
		if !e.visible {
			continue
		}
		if sent == maxItems {
			return i, sent
		}
		sent++
	}
	return cut, sent
}

// advance sets each listed backend's position in the next cursor from
// what the page took of it.
func (m *pageMerge) advance(cut int) {
	perResult := make([]int, len(m.results))
	for _, e := range m.entries[:cut] {
		perResult[e.res]++
	}
	taken := map[string]int{}
	for ri, n := range perResult {
		if n > 0 {
			taken[m.results[ri].key] = n
		}
	}
	for key, n := range m.left {
		pos := m.positions[key]
		if taken[key] < n {
			m.next.Backends[key] = sealed.BackendCursor{Cursor: pos.Cursor, Offset: pos.Offset + taken[key]}
			m.more = true
			continue
		}
		m.next.Backends[key] = sealed.BackendCursor{Cursor: m.pageNext[key], Done: m.pageNext[key] == ""}
		if m.pageNext[key] != "" {
			m.more = true
		}
	}
}

// fields starts the page's result object: a single backend's own result
// fields, without the items and the cursor the page writes itself.
func (m *pageMerge) fields() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	if m.v.single() {
		for _, res := range m.results {
			if res != nil && res.result != nil {
				for k, val := range res.result {
					out[k] = val
				}
			}
		}
	}
	delete(out, m.op.field) // the page's own: written below
	delete(out, "nextCursor")
	return out
}

// pageCursor adds the page's nextCursor and the _meta naming skipped
// backends to out.
//
// More pages exist when a backend said so. When none does but a backend
// that failed is mid-walk, its remaining pages exist too and only it can
// serve them: ending the walk would drop them without a word, so the page
// fails instead, and the client may retry the same cursor (every backend's
// position in it is unchanged). A backend that has failed since the first
// page was never part of the walk; it is named in _meta on every page, and
// the walk ends without it.
func (fd *federation) pageCursor(ctx context.Context, m *pageMerge, out map[string]json.RawMessage) error {
	if !m.more && len(m.stranded) > 0 {
		return &strandedPagesError{method: m.op.method, backends: m.stranded}
	}
	if m.more {
		key, err := fd.cursorKey(ctx)
		if err != nil {
			return err
		}
		tok, err := sealed.SealCursor(key, m.next)
		if err != nil {
			return err
		}
		out["nextCursor"], _ = json.Marshal(tok)
	}
	if len(m.skipped) > 0 {
		sort.Strings(m.skipped)
		meta := map[string]json.RawMessage{}
		if mv, ok := out["_meta"]; ok {
			_ = json.Unmarshal(mv, &meta)
		}
		meta[MetaSkippedBackends], _ = json.Marshal(m.skipped)
		addSignInMeta(meta, m.results) // sign_in.go
		out["_meta"], _ = json.Marshal(meta)
	}
	return nil
}

// A list page (770 kB for 1,000 tools) was a new buffer every time,
// zeroed, written once and dropped: with the list cache, most of the
// collector's work. A front that knows when a response has been written
// lends the request a buffer from a pool for its page (LendPageBuffer,
// Call.Page), and takes it back after.

// PageBuffer is a buffer lent to one request for its list page.
type PageBuffer struct {
	b    []byte
	lent atomic.Bool // taken by the request's page
}

var pageBuffers = sync.Pool{New: func() any { return new(PageBuffer) }}

// maxPooledPage: a buffer grown past this (a page of huge items) is
// dropped when given back rather than kept in the pool.
const maxPooledPage = 4 << 20

// LendPageBuffer lends a buffer for the list page a request may build
// (Call.Page). The page a list request answers with is then that buffer's
// bytes: release gives it back, and must be called only once the
// response has been written and nothing reads its result any more.
func LendPageBuffer() (_ *PageBuffer, release func()) {
	pb := pageBuffers.Get().(*PageBuffer)
	return pb, func() {
		if cap(pb.b) > maxPooledPage {
			pb.b = nil
		}
		pb.b = pb.b[:0]
		pb.lent.Store(false)
		pageBuffers.Put(pb)
	}
}

// take is the buffer for a page, once (a second page of the same
// request, should there be one, gets a buffer of its own); nil when none
// was lent.
func (pb *PageBuffer) take() *PageBuffer {
	if pb == nil || !pb.lent.CompareAndSwap(false, true) {
		return nil
	}
	return pb
}

// strandedPagesError: the only backends with pages left failed.
type strandedPagesError struct {
	method   string
	backends []string
}

func (e *strandedPagesError) Error() string {
	return fmt.Sprintf("backend %s failed while it holds the remaining pages of %s; retry with the same cursor",
		strings.Join(quoteAll(e.backends), ", "), e.method)
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Quote(k)
	}
	return out
}

// renameAll applies the publishing rule to a page's items. scans, when
// set, are the items' members as decode found them (else each item is
// walked here). An item renamed in place is left to be written renamed
// (namedItem.edit) unless copies is set: the list cache keeps a page's
// renamed items, written end to end into one buffer (itemArena), not one
// allocation each, so that a page of 200 tools is one object for the
// collector to track for as long as the entry lives.
func (fd *federation) renameAll(v *vhost, op listOp, key string, items []json.RawMessage, scans []itemScan, copies bool) ([]namedItem, error) {
	named := make([]namedItem, len(items))
	tasks := fd.taskPolicy(v, op, key)
	var arena *itemArena
	if copies {
		arena = newItemArena(items, key)
	}
	for i, item := range items {
		var scan *itemScan
		switch {
		case tasks != nil:
			item = withTaskSupport(tasks, item) // tasks_run.go: the item changed
		case len(scans) == len(items) && scans[i].scanned:
			scan = &scans[i]
		}
		n, err := fd.nameItem(v, op, key, item, scan)
		if err != nil {
			return nil, err
		}
		if copies && n.edit {
			n.item, n.edit = n.appendTo(arena.take(n.size())), false
		}
		named[i] = n
	}
	return named, nil
}

// itemArena hands out room for renamed items from one buffer: each gets
// the bytes it needs (a full slice, so no item can grow into the next),
// and a page that outgrows the estimate continues in a new chunk.
// The buffer is allocated at the first item renamed: a single-backend
// vhost passes its items through and needs none.
type itemArena struct {
	buf  []byte
	size int // of the first chunk
}

// newItemArena is room for items renamed with key's prefix (and, for
// resources, their URIs too).
func newItemArena(items []json.RawMessage, key string) *itemArena {
	n := 0
	for _, it := range items {
		n += len(it) + 2*len(key) + 4
	}
	return &itemArena{size: n}
}

// take returns an empty slice with room for n bytes.
func (a *itemArena) take(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(n, a.size, 64<<10))
		a.size = 0
	}
	at := len(a.buf)
	a.buf = a.buf[:at+n]
	return a.buf[at : at : at+n]
}

// renameItem applies the publishing rule to one list item and returns it
// with its downstream name and the identifier access rules judge (the
// name; for resources and templates the published URI or URI template).
// Items whose name does not change pass through byte-for-byte.
func (fd *federation) renameItem(v *vhost, op listOp, key string, item json.RawMessage) (json.RawMessage, string, string, error) {
	n, err := fd.nameItem(v, op, key, item, nil)
	if err != nil {
		return nil, "", "", err
	}
	if n.edit {
		n.item = n.appendTo(make([]byte, 0, n.size()))
	}
	return n.item, n.name, n.id, nil
}

// span is where a member's value lies in an item; end 0: absent.
type span struct{ start, end, count int }

// itemScan is where the members renaming reads lie in an item's top
// level: found while a backend's page is decoded (pageResult.decode), so
// that the item is not walked a second time, or by renameItemInto. It is
// kept small (a page keeps one per item until it is renamed).
type itemScan struct {
	name, uri, meta span32
	scanned         bool // the item is an object, and every member was seen
}

// span32 is a span within one item.
type span32 struct {
	start, end int32
	count      uint8 // saturates: only 0, 1 and more matter
}

func (s span32) span() span { return span{int(s.start), int(s.end), int(s.count)} }

func (s *span32) set(start, end int) {
	*s = span32{int32(start), int32(end), min(s.count, 254) + 1}
}

// member notes the top-level member k of an item, its value at
// item[start:end].
func (s *itemScan) member(op listOp, k []byte, start, end int) {
	switch {
	case string(k) == "_meta":
		s.meta.set(start, end)
	case string(k) == "name":
		s.name.set(start, end)
	case op.uriField != "" && string(k) == op.uriField:
		s.uri.set(start, end)
	}
}

// nameItem is the item's published name and identifier and how it is
// published: as it is, with its name (and URI) replaced in place when it
// is written (edit), or rewritten now (the rare items below). scan, when
// set, is where the item's members lie (else the item is walked here).
func (fd *federation) nameItem(v *vhost, op listOp, key string, item json.RawMessage, scan *itemScan) (namedItem, error) {
	if op.field == "skills" {
		return nameSkill(v, key, item, scan) // skills.go: no name member to rename
	}
	scan, name, uri, meta, err := readItem(op, item, scan)
	if err != nil {
		return namedItem{}, err
	}
	nameAt, uriAt := scan.name.span(), scan.uri.span()
	hasName := nameAt.count > 0
	alias, aliased := "", false
	if op.field == "tools" {
		alias, aliased = v.aliases.Advertised(key, name)
	}
	id := name
	if op.uriField != "" {
		id = uri
		if !v.single() && uri != "" {
			id = naming.PublishURI(key, uri)
		}
	}
	if v.single() && !aliased {
		return namedItem{name: name, id: id, item: item}, nil
	}
	switch {
	case aliased:
		name = alias
	case op.uriField != "" && naming.KeepsName(uri):
		// A skill:// resource keeps its name (naming/skills.go).
	default:
		name = naming.Prefix(key, name)
	}
	if op.uriField == "" {
		id = name
	}
	newURI := op.uriField != "" && !v.single() && uri != ""
	rare := !hasName || op.field == "tools" && !v.single() && meta != nil && naming.MayNameURIs(meta)
	if !rare && nameAt.count == 1 && uriAt.count <= 1 {
		n := namedItem{name: name, id: id, item: item, edit: true, nameAt: scan.name}
		if newURI {
			n.uriAt = scan.uri
		}
		return n, nil
	}
	out, err := respliceItem(v, op, key, item, name, id, newURI, rare)
	if err != nil {
		return namedItem{}, err
	}
	return namedItem{name: name, id: id, item: out}, nil
}

// readItem finds an item's name, URI and _meta. One pass over the item's
// top level (or none: decode's, when scan is given): its bytes were
// checked when the backend's answer was decoded, and all but two members
// pass as they are, copied around the new values in one go.
func readItem(op listOp, item json.RawMessage, scan *itemScan) (_ *itemScan, name, uri string, meta []byte, err error) {
	if scan == nil {
		scan = new(itemScan)
		if !wire.MembersAt(item, func(k []byte, start, end int) bool {
			scan.member(op, k, start, end)
			return true
		}) {
			return nil, "", "", nil, errMalformedItem
		}
	}
	nameAt, uriAt := scan.name.span(), scan.uri.span()
	bad := false
	if nameAt.count > 0 {
		name, bad = stringMember(item[nameAt.start:nameAt.end])
	}
	if uriAt.count > 0 && !bad {
		uri, bad = stringMember(item[uriAt.start:uriAt.end])
	}
	if bad {
		return nil, "", "", nil, errMalformedItem
	}
	if scan.meta.count > 0 {
		meta = item[scan.meta.start:scan.meta.end]
	}
	return scan, name, uri, meta, nil
}

// respliceItem writes an item's new name (and URI, when newURI) into a
// copy of it; a rare item (nameless, or an MCP Apps tool whose _meta names
// a UI resource) is decoded and rewritten whole.
func respliceItem(v *vhost, op listOp, key string, item json.RawMessage, name, id string, newURI, rare bool) (json.RawMessage, error) {
	quotedName := wire.Quoted(name)
	var out []byte
	if newURI {
		out, _ = wire.Splice(item, wire.Member{Key: "name", Value: quotedName}, wire.Member{Key: op.uriField, Value: wire.Quoted(id)})
	} else {
		out, _ = wire.Splice(item, wire.Member{Key: "name", Value: quotedName})
	}
	if rare {
		// A nameless item gets one; an MCP Apps tool's UI resource in
		// _meta is renamed too. Both need the members decoded.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out, &fields); err != nil {
			return nil, err
		}
		fields["name"] = quotedName
		if op.field == "tools" && !v.single() {
			naming.PublishUIMeta(key, fields)
		}
		out = wire.RawObject(fields)
	}
	return out, nil
}

// errMalformedItem: a backend's list item is not an object, or its name or
// URI is not a string.
var errMalformedItem = errors.New("a list item is not an object with string name and uri")

// stringMember decodes a member that must be a string (null: empty); bad
// is true for any other value.
func stringMember(val []byte) (s string, bad bool) {
	if string(val) == "null" {
		return "", false
	}
	s, ok := wire.String(val)
	return s, !ok
}
