package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/sealed"
)

// Merge builds the downstream list result from one page of every
// backend (Waves'): items renamed by the prefix/alias rule, sorted by
// name (ties by backend key), the next gateway cursor, and _meta naming
// skipped backends. Items the request's access rules hide are left out
// here, per request, after the list cache: a page may come out shorter,
// or empty with a cursor, and the walk goes on. A backend hidden whole
// keeps its position and holds no pages of this walk.
//
// private marks the next cursor private. decorate, when set, adds a
// 2026-07-28 page's own fields before the page is encoded. lent, when
// set, is the buffer the page is written in. An error is a
// *StrandedPagesError, or Source.Seal's.
//
// A single-backend vhost passes names through unchanged and keeps the
// backend's own order and result fields; only nextCursor is replaced by a
// gateway cursor, so that cursors are uniform across vhosts.
func (l *List) Merge(ctx context.Context, src Source, pages []*Page, private bool, decorate func(map[string]json.RawMessage), lent *PageBuffer) (json.RawMessage, error) {
	m := &pageMerge{l: l, pages: pages,
		lists: make([][]Item, len(pages)), pageNext: map[string]string{}, left: map[string]int{},
		next: &sealed.Cursor{Op: l.Op.Method, VHost: l.VHost, Principal: sealed.PrincipalTag(l.Principal), Backends: map[string]sealed.BackendCursor{}, Private: private}}
	if err := m.collect(); err != nil {
		return nil, err
	}
	m.sort()
	cut, sent := m.bound(l.MaxItems)
	m.advance(cut)
	out := m.fields()
	items, size := make([]*Item, 0, len(l.Lead)+sent), 0
	for _, it := range l.Lead {
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
	if err := m.cursor(ctx, src, out); err != nil {
		return nil, err
	}
	if decorate != nil {
		decorate(out)
	}
	appendItem := func(b []byte, i int) []byte { return items[i].appendTo(b) }
	pb := lent.take()
	if pb == nil {
		return wire.AppendRawObjectArrayFunc(nil, out, l.Op.Field, len(items), size, appendItem), nil
	}
	pb.b = wire.AppendRawObjectArrayFunc(pb.b[:0], out, l.Op.Field, len(items), size, appendItem)
	return pb.b, nil
}

// pageMerge is one list page being merged from the backends' pages.
type pageMerge struct {
	l        *List
	pages    []*Page
	entries  []pageEntry
	lists    [][]Item // each page's named items
	next     *sealed.Cursor
	more     bool
	pageNext map[string]string // each listed backend's own next cursor
	left     map[string]int    // each listed backend's items on this page, past its offset
	skipped  []string
	stranded []string
}

// A pageEntry is an item's place (its page's, and its own in that page's
// named items): no pointers, so the page's few thousand entries are one
// block the collector does not scan.
type pageEntry struct {
	res, idx int32
	visible  bool // hidden items hold their place in the walk, unsent
}

func (m *pageMerge) byName(a, b pageEntry) int {
	return strings.Compare(m.lists[a.res][a.idx].Name, m.lists[b.res][b.idx].Name)
}

// collect takes each page's items past its offset into the entries, and
// notes the backends that hold no items on this page.
func (m *pageMerge) collect() error {
	total := 0
	for _, p := range m.pages {
		if p != nil && p.Queried && !p.Failed {
			total += p.Size()
		}
	}
	m.entries = make([]pageEntry, 0, total)
	l := m.l
	filter := l.Listed != nil && l.Op.Field == "tools"
	for ri, p := range m.pages {
		if p == nil || !m.listed(p) {
			continue
		}
		named := p.Named
		if named == nil {
			// Renamed as the page is written: the items stay the
			// backend's bytes until then.
			var err error
			if named, err = l.Naming.RenameAll(l.Op, p.Key, p.Items, p.Scans, false); err != nil {
				return err
			}
		}
		m.lists[ri] = named
		from := len(m.entries)
		for i, n := range named {
			m.entries = append(m.entries, pageEntry{res: int32(ri), idx: int32(i), visible: l.Access.Listed(n.ID) && (!filter || l.Listed(&named[i]))})
		}
		own := m.entries[from:]
		if !l.Naming.Single {
			// In the merged order, so that what one page takes of this
			// backend's page is a prefix of it (bound).
			slices.SortStableFunc(own, m.byName)
		}
		skip := min(l.Positions[p.Key].Offset, len(own))
		m.entries = append(m.entries[:from], own[skip:]...)
		m.pageNext[p.Key], m.left[p.Key] = p.Next, len(own)-skip
	}
	return nil
}

// listed reports whether p has items on this page (true); when it has
// none it records where its walk stands instead.
func (m *pageMerge) listed(p *Page) bool {
	positions := m.l.Positions
	switch {
	case p.Hidden:
		if pos, ok := positions[p.Key]; ok {
			m.next.Backends[p.Key] = pos
		}
		return false
	case p.Deferred:
		// Not asked for this page (Waves): it holds items still.
		if pos, ok := positions[p.Key]; ok {
			m.next.Backends[p.Key] = pos
		}
		m.more = true
		return false
	case !p.Queried:
		m.next.Backends[p.Key] = sealed.BackendCursor{Done: true}
		return false
	case p.Failed:
		m.skipped = append(m.skipped, p.Key)
		// A failed backend keeps its position, so a later page retries it.
		m.next.Backends[p.Key] = positions[p.Key]
		if positions[p.Key].Cursor != "" {
			m.stranded = append(m.stranded, p.Key) // mid-walk: it holds pages
		}
		return false
	}
	return true
}

// sort puts a merged page in name order, ties by backend key.
func (m *pageMerge) sort() {
	if m.l.Naming.Single {
		return
	}
	slices.SortStableFunc(m.entries, func(a, b pageEntry) int {
		if c := m.byName(a, b); c != 0 {
			return c
		}
		return strings.Compare(m.pages[a.res].Key, m.pages[b.res].Key)
	})
}

// bound cuts the page at maxItems visible items: past the bound, the rest
// of each backend's page waits for the next gateway page, which asks the
// backend for the same page again and skips what was sent
// (sealed.BackendCursor.Offset). A page holds at most MaxItems items,
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
	perPage := make([]int, len(m.pages))
	for _, e := range m.entries[:cut] {
		perPage[e.res]++
	}
	taken := map[string]int{}
	for ri, n := range perPage {
		if n > 0 {
			taken[m.pages[ri].Key] = n
		}
	}
	for key, n := range m.left {
		pos := m.l.Positions[key]
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
	if m.l.Naming.Single {
		for _, p := range m.pages {
			if p != nil && p.Result != nil {
				for k, val := range p.Result {
					out[k] = val
				}
			}
		}
	}
	delete(out, m.l.Op.Field) // the page's own: written below
	delete(out, "nextCursor")
	return out
}

// cursor adds the page's nextCursor and the _meta naming skipped
// backends to out.
//
// More pages exist when a backend said so. When none does but a backend
// that failed is mid-walk, its remaining pages exist too and only it can
// serve them: ending the walk would drop them without a word, so the page
// fails instead, and the client may retry the same cursor (every backend's
// position in it is unchanged). A backend that has failed since the first
// page was never part of the walk; it is named in _meta on every page, and
// the walk ends without it.
func (m *pageMerge) cursor(ctx context.Context, src Source, out map[string]json.RawMessage) error {
	if !m.more && len(m.stranded) > 0 {
		return &StrandedPagesError{Method: m.l.Op.Method, Backends: m.stranded}
	}
	if m.more {
		tok, err := src.Seal(ctx, m.next)
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
		addSignInMeta(meta, m.pages)
		out["_meta"], _ = json.Marshal(meta)
	}
	return nil
}

// addSignInMeta adds MetaSignInRequired to a list's _meta for the pages
// that need a sign-in.
func addSignInMeta(meta map[string]json.RawMessage, pages []*Page) {
	var need []map[string]string
	for _, p := range pages {
		if p != nil && p.SignIn != nil {
			need = append(need, map[string]string{"backend": p.Key, "url": p.SignIn.URL, "message": p.SignIn.Message()})
		}
	}
	if len(need) > 0 {
		meta[MetaSignInRequired], _ = json.Marshal(need)
	}
}

// StrandedPagesError: the only backends with pages left failed.
type StrandedPagesError struct {
	Method   string
	Backends []string
}

func (e *StrandedPagesError) Error() string {
	return fmt.Sprintf("backend %s failed while it holds the remaining pages of %s; retry with the same cursor",
		strings.Join(quoteAll(e.Backends), ", "), e.Method)
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Quote(k)
	}
	return out
}
