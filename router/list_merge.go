package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
// is encoded.
//
// A single-backend vhost passes names through unchanged and keeps the
// backend's own order and result fields; only nextCursor is replaced by a
// gateway cursor, so that cursors are uniform across vhosts.
func (r *Router) mergePages(ctx context.Context, v *vhost, op listOp, principal string, access accessView, positions map[string]backendCursor, results []*pageResult, private bool, decorate func(map[string]json.RawMessage)) (json.RawMessage, error) {
	type entry struct {
		name, key string
		item      json.RawMessage
		visible   bool // hidden items hold their place in the walk, unsent
	}
	var entries []entry
	var skipped, stranded []string
	next := &cursorState{Op: op.method, VHost: v.name, Principal: principalTag(principal), Backends: map[string]backendCursor{}, Private: private}
	more := false
	pageNext := map[string]string{} // each listed backend's own next cursor
	left := map[string]int{}        // each listed backend's items on this page, past its offset
	for _, res := range results {
		switch {
		case res == nil:
			continue
		case res.hidden:
			if pos, ok := positions[res.key]; ok {
				next.Backends[res.key] = pos
			}
			continue
		case !res.queried:
			next.Backends[res.key] = backendCursor{Done: true}
			continue
		case res.failed:
			skipped = append(skipped, res.key)
			// A failed backend keeps its position, so a later page retries it.
			next.Backends[res.key] = positions[res.key]
			if positions[res.key].Cursor != "" {
				stranded = append(stranded, res.key) // mid-walk: it holds pages
			}
			continue
		}
		named := res.named
		if named == nil {
			var err error
			if named, err = r.renameAll(v, op, res.key, res.items); err != nil {
				return nil, err
			}
		}
		own := make([]entry, len(named))
		for i, n := range named {
			own[i] = entry{name: n.name, key: res.key, item: n.item, visible: access.visible(n.id)}
		}
		if !v.single() {
			// In the merged order, so that what one page takes of this
			// backend's page is a prefix of it (pageBound).
			sort.SliceStable(own, func(i, j int) bool { return own[i].name < own[j].name })
		}
		own = own[min(positions[res.key].Offset, len(own)):]
		pageNext[res.key], left[res.key] = res.next, len(own)
		entries = append(entries, own...)
	}
	if !v.single() {
		sort.SliceStable(entries, func(i, j int) bool {
			if entries[i].name != entries[j].name {
				return entries[i].name < entries[j].name
			}
			return entries[i].key < entries[j].key
		})
	}
	// A page holds at most MaxPageItems items, whatever the number of
	// backends: past the bound, the rest of each backend's page waits for
	// the next gateway page, which asks the backend for the same page
	// again and skips what was sent (backendCursor.Offset).
	cut, sent := len(entries), 0
	for i, e := range entries {
		if !e.visible {
			continue
		}
		if sent == r.opts.MaxPageItems {
			cut = i
			break
		}
		sent++
	}
	taken := map[string]int{}
	for _, e := range entries[:cut] {
		taken[e.key]++
	}
	for key, n := range left {
		pos := positions[key]
		if taken[key] < n {
			next.Backends[key] = backendCursor{Cursor: pos.Cursor, Offset: pos.Offset + taken[key]}
			more = true
			continue
		}
		next.Backends[key] = backendCursor{Cursor: pageNext[key], Done: pageNext[key] == ""}
		if pageNext[key] != "" {
			more = true
		}
	}

	out := map[string]json.RawMessage{}
	if v.single() {
		for _, res := range results {
			if res != nil && res.result != nil {
				for k, val := range res.result {
					out[k] = val
				}
			}
		}
	}
	items := make([]json.RawMessage, 0, sent)
	for _, e := range entries[:cut] {
		if e.visible {
			items = append(items, e.item)
		}
	}
	out[op.field] = rawArray(items)
	delete(out, "nextCursor")
	// More pages exist when a backend said so. When none does but a backend
	// that failed is mid-walk, its remaining pages exist too and only it
	// can serve them: ending the walk would drop them without a word, so
	// the page fails instead, and the client may retry the same cursor
	// (every backend's position in it is unchanged). A backend that has
	// failed since the first page was never part of the walk; it is named
	// in _meta on every page, and the walk ends without it.
	if !more && len(stranded) > 0 {
		return nil, &strandedPagesError{method: op.method, backends: stranded}
	}
	if more {
		key, err := r.cursorKey(ctx)
		if err != nil {
			return nil, err
		}
		tok, err := encodeCursor(key, next)
		if err != nil {
			return nil, err
		}
		out["nextCursor"], _ = json.Marshal(tok)
	}
	if len(skipped) > 0 {
		sort.Strings(skipped)
		meta := map[string]json.RawMessage{}
		if m, ok := out["_meta"]; ok {
			_ = json.Unmarshal(m, &meta)
		}
		meta[MetaSkippedBackends], _ = json.Marshal(skipped)
		addSignInMeta(meta, results) // sign_in.go
		out["_meta"], _ = json.Marshal(meta)
	}
	if decorate != nil {
		decorate(out)
	}
	return rawObject(out), nil
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

// renameAll applies the publishing rule to a page's items.
func (r *Router) renameAll(v *vhost, op listOp, key string, items []json.RawMessage) ([]namedItem, error) {
	named := make([]namedItem, len(items))
	for i, item := range items {
		renamed, name, id, err := r.renameItem(v, op, key, item)
		if err != nil {
			return nil, err
		}
		named[i] = namedItem{name: name, id: id, item: renamed}
	}
	return named, nil
}

// rawArray and rawObject assemble JSON from values that are valid JSON
// already (backend bytes the upstream decoder checked, or our own
// encoding): encoding/json would check and compact every byte again.
func rawArray(items []json.RawMessage) json.RawMessage {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRaw(b, it)
	}
	return append(b, ']')
}

func rawObject(m map[string]json.RawMessage) json.RawMessage {
	keys := make([]string, 0, len(m))
	n := 2
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	sort.Strings(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		b = append(b, kb...)
		b = append(b, ':')
		b = appendRaw(b, m[k])
	}
	return append(b, '}')
}

func appendRaw(b []byte, v json.RawMessage) []byte {
	if len(v) == 0 {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// renameItem applies the publishing rule to one list item and returns it
// with its downstream name and the identifier access rules judge (the
// name; for resources and templates the published URI or URI template).
// Items whose name does not change pass through byte-for-byte.
func (r *Router) renameItem(v *vhost, op listOp, key string, item json.RawMessage) (json.RawMessage, string, string, error) {
	var head struct {
		Name        string `json:"name"`
		URI         string `json:"uri"`
		URITemplate string `json:"uriTemplate"`
	}
	if err := json.Unmarshal(item, &head); err != nil {
		return nil, "", "", err
	}
	name := head.Name
	alias, aliased := "", false
	if op.field == "tools" {
		alias, aliased = v.aliases.advertised(key, head.Name)
	}
	id := func(name string) string {
		var uri string
		switch op.uriField {
		case "":
			return name
		case "uri":
			uri = head.URI
		default:
			uri = head.URITemplate
		}
		if !v.single() && uri != "" {
			uri = publishURI(key, uri)
		}
		return uri
	}
	if v.single() && !aliased {
		return item, name, id(name), nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(item, &fields); err != nil {
		return nil, "", "", err
	}
	switch {
	case aliased:
		name = alias
	default:
		name = prefix(key, head.Name)
	}
	fields["name"], _ = json.Marshal(name)
	if op.uriField != "" && !v.single() {
		var uri string
		if err := json.Unmarshal(fields[op.uriField], &uri); err == nil && uri != "" {
			fields[op.uriField], _ = json.Marshal(publishURI(key, uri))
		}
	}
	if op.field == "tools" && !v.single() && mayNameURIs(item) {
		publishUIMeta(key, fields) // an MCP Apps tool's UI resource
	}
	out, err := json.Marshal(fields)
	return out, name, id(name), err
}
