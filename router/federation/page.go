// Package federation builds one list page of a virtual host from its
// backends' pages: which backends to ask and in what waves, the merge,
// the federated cursor's positions.
package federation

import (
	"bytes"
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/upstream"
)

// Op describes one of the list methods (its row: the router's methods.go).
type Op struct {
	Method     string // e.g. "tools/list"
	Field      string // result array: "tools"
	Capability string // snapshot capability (or extension) that makes a backend eligible
	URIField   string // "uri" / "uriTemplate" to prefix, or ""
}

// MetaSkippedBackends is the result _meta key naming backends that were
// skipped because they failed or were unreachable.
const MetaSkippedBackends = "mcpgw/skippedBackends"

// MetaSignInRequired is the list result _meta key naming the user_oauth
// backends the caller has not signed in to, each with a connect link and
// a message: the backend's items are missing from the list (it cannot be
// asked without the user's token) until the user opens the link, so a
// client can show it and a person can start the sign-in from the list.
const MetaSignInRequired = "mcpgw/signInRequired"

// Page is one backend's answer to one list page.
type Page struct {
	Key     string
	Queried bool // false: backend lacks the capability, or was not due
	Failed  bool
	Result  map[string]json.RawMessage
	Items   []json.RawMessage
	Scans   []ItemScan // each item's members renaming needs, found by Decode
	Next    string
	// Named holds items renamed by the publishing rule, when computed
	// ahead (cached pages are renamed once, when cached).
	Named []Item
	// Hidden: the caller's access rules hide everything the backend could
	// list, so it was not asked; its position in the walk is kept.
	Hidden bool
	// Deferred: the backends before it in key order were expected to
	// fill the page, so it was not asked; its position is kept and the
	// walk goes on (List.Waves).
	Deferred bool
	// SignIn: a user_oauth backend the caller has not signed in to; it
	// counts as failed.
	SignIn *credentials.SignInRequired
	// Pooled: the page is this request's alone (not the list cache's),
	// and the buffer its answer was read into (Answer) goes back to
	// bufpool once the gateway's page is built (Release).
	Pooled bool
	Answer upstream.AnswerBuffer
}

// Release gives a page's buffer back (pooled pages only): its items,
// result and named items must not be read afterwards.
func (p *Page) Release() {
	if p == nil || !p.Pooled {
		return
	}
	p.Answer.Release()
	p.Items, p.Scans, p.Result, p.Named = nil, nil, nil, nil
}

// Hints are the caching hints of a merged page: the shortest lifetime of
// the pages it was made of, private if any was (a failed backend's
// absence is not cached for long either: its ttlMs counts as 0).
func Hints(pages []*Page) envelope.Hints {
	h, seen := envelope.Hints{}, false
	for _, p := range pages {
		switch {
		case p == nil || !p.Queried:
			continue
		case p.SignIn != nil:
			return envelope.Hints{Private: true} // its _meta holds the caller's link
		case p.Failed || p.Result == nil:
			return envelope.Hints{}
		case !seen:
			h, seen = envelope.HintsOf(p.Result), true
		default:
			h = h.Merge(envelope.HintsOf(p.Result))
		}
	}
	return h
}

// maxExpectedItems bounds the items a page's decode makes room for
// ahead (Decode's expect): 8,192 items is 416 kB of room.
const maxExpectedItems = 8192

// Size is the number of items of the page.
func (p *Page) Size() int {
	if p.Items == nil && p.Named != nil {
		return len(p.Named) // DropRaw
	}
	return len(p.Items)
}

// DropRaw lets a cached page of a multi-backend vhost, renamed, go of
// the backend's answer: its renamed items are copies, and of the rest
// only the small members (cache hints, the cursor) are read again. A
// cached page then holds its items once, not twice (a 200-tool page:
// about 150 kB less, for as long as the entry lives).
func (p *Page) DropRaw(op Op) {
	small := make(map[string]json.RawMessage, len(p.Result))
	for k, v := range p.Result {
		if k != op.Field {
			small[k] = bytes.Clone(v)
		}
	}
	p.Result, p.Items, p.Scans = small, nil, nil
}

// Decode reads a backend's list result into p: its members, its items,
// what renaming needs of each item (ItemScan) and its next cursor, in one
// pass that also checks the result is valid JSON, as strictly as
// encoding/json (wire.ValidMembersElementMembers: the items, and their
// members, are found while the array is crossed). An item array or cursor
// of another type reads as none, as encoding/json's would; a result that
// is not an object, or not valid, fails. expect is how many items the
// backend's latest page held (0: unknown). What an earlier decode of p
// found is replaced.
func (p *Page) Decode(result json.RawMessage, op Op, expect int) bool {
	fn, member, elem := p.walker(op, expect)
	return wire.ValidMembersElementMembers(result, 1, op.Field, fn, member, elem)
}

// DecodeAt is Decode of the result starting at data[i] (a backend's
// whole answer, as upstream.CallOptions.ResultCheck hands it over): the
// index just past it, or -1.
func (p *Page) DecodeAt(data []byte, i int, op Op, expect int) int {
	fn, member, elem := p.walker(op, expect)
	return wire.ValidMembersElementMembersAt(data, i, 1, op.Field, fn, member, elem)
}

// walker is what decode's walk calls back: with each member of the
// result, each member of an item, and each item.
func (p *Page) walker(op Op, expect int) (fn func(string, []byte), member func([]byte, int, int), elem func([]byte)) {
	p.Result, p.Items, p.Scans, p.Next = map[string]json.RawMessage{}, nil, nil, ""
	// The latest array's, until its member is seen; sized for the items
	// the backend's latest page held, so that they are not grown by
	// doubling, copied at every step.
	// (At most maxExpectedItems: one huge page does not size every later
	// one.)
	n := min(expect, maxExpectedItems)
	items := make([]json.RawMessage, 0, n)
	scans := make([]ItemScan, 0, n)
	var scan ItemScan // the element being crossed
	fn = func(k string, v []byte) {
		p.Result[k] = v
		switch k {
		case op.Field:
			p.Items, items = items, nil // nil when not an array
			p.Scans, scans = scans, nil
			if len(p.Items) == 0 {
				p.Items, p.Scans = nil, nil // as for none
			}
		case "nextCursor":
			p.Next, _ = wire.String(v)
		}
	}
	member = func(k []byte, start, end int) { scan.member(op, k, start, end) }
	elem = func(item []byte) {
		items = append(items, item)
		scan.scanned = len(item) > 0 && item[0] == '{'
		scans = append(scans, scan)
		scan = ItemScan{}
	}
	return fn, member, elem
}
