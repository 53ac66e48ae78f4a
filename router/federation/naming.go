package federation

import (
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/naming"
)

// A page's items are published by the vhost's naming rule (package
// router/naming) before they are merged: renamed in place where only
// the name (and URI) change, rewritten whole in the rare cases.

// Naming is a vhost's publishing rule for list items: a backend's items
// get its prefix (a tool its alias, where the config gives one), and
// resources and templates their URIs published; on a vhost of one
// backend names and URIs pass through.
type Naming struct {
	Single  bool            // the vhost has one backend
	Aliases *naming.Aliases // its tool aliases; nil: none
	// Tasks, when set, is what marks backend key's items that op lists
	// before they are named (the router's: tools the gateway runs as
	// tasks get execution.taskSupport); nil, or a nil func: as they are.
	Tasks func(op Op, key string) func(item json.RawMessage) json.RawMessage
}

// RenameAll applies the publishing rule to a page's items. scans, when
// set, are the items' members as Decode found them (else each item is
// walked here). An item renamed in place is left to be written renamed
// (Item.edit) unless copies is set: the list cache keeps a page's
// renamed items, written end to end into one buffer (itemArena), not one
// allocation each, so that a page of 200 tools is one object for the
// collector to track for as long as the entry lives.
func (nm Naming) RenameAll(op Op, key string, items []json.RawMessage, scans []ItemScan, copies bool) ([]Item, error) {
	named := make([]Item, len(items))
	var tasks func(json.RawMessage) json.RawMessage
	if nm.Tasks != nil {
		tasks = nm.Tasks(op, key)
	}
	var arena *itemArena
	if copies {
		arena = newItemArena(items, key)
	}
	for i, item := range items {
		var scan *ItemScan
		switch {
		case tasks != nil:
			item = tasks(item) // the item changed
		case len(scans) == len(items) && scans[i].scanned:
			scan = &scans[i]
		}
		n, err := nm.nameItem(op, key, item, scan)
		if err != nil {
			return nil, err
		}
		if copies && n.edit {
			n.Raw, n.edit = n.appendTo(arena.take(n.size())), false
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

// RenameItem applies the publishing rule to one list item and returns it
// with its downstream name and the identifier access rules judge (the
// name; for resources and templates the published URI or URI template).
// Items whose name does not change pass through byte-for-byte.
func (nm Naming) RenameItem(op Op, key string, item json.RawMessage) (json.RawMessage, string, string, error) {
	n, err := nm.nameItem(op, key, item, nil)
	if err != nil {
		return nil, "", "", err
	}
	if n.edit {
		n.Raw = n.appendTo(make([]byte, 0, n.size()))
	}
	return n.Raw, n.Name, n.ID, nil
}

// nameItem is the item's published name and identifier and how it is
// published: as it is, with its name (and URI) replaced in place when it
// is written (edit), or rewritten now (the rare items below). scan, when
// set, is where the item's members lie (else the item is walked here).
func (nm Naming) nameItem(op Op, key string, item json.RawMessage, scan *ItemScan) (Item, error) {
	if op.Field == "skills" {
		return nm.nameSkill(key, item, scan) // no name member to rename
	}
	scan, name, uri, meta, err := readItem(op, item, scan)
	if err != nil {
		return Item{}, err
	}
	nameAt, uriAt := scan.name.span(), scan.uri.span()
	hasName := nameAt.count > 0
	alias, aliased := "", false
	if op.Field == "tools" && nm.Aliases != nil {
		alias, aliased = nm.Aliases.Advertised(key, name)
	}
	id := name
	if op.URIField != "" {
		id = uri
		if !nm.Single && uri != "" {
			id = naming.PublishURI(key, uri)
		}
	}
	if nm.Single && !aliased {
		return Item{Name: name, ID: id, Raw: item}, nil
	}
	switch {
	case aliased:
		name = alias
	case op.URIField != "" && naming.KeepsName(uri):
		// A skill:// resource keeps its name (naming/skills.go).
	default:
		name = naming.Prefix(key, name)
	}
	if op.URIField == "" {
		id = name
	}
	newURI := op.URIField != "" && !nm.Single && uri != ""
	rare := !hasName || op.Field == "tools" && !nm.Single && meta != nil && naming.MayNameURIs(meta)
	if !rare && nameAt.count == 1 && uriAt.count <= 1 {
		n := Item{Name: name, ID: id, Raw: item, edit: true, nameAt: scan.name}
		if newURI {
			n.uriAt = scan.uri
		}
		return n, nil
	}
	out, err := nm.respliceItem(op, key, item, name, id, newURI, rare)
	if err != nil {
		return Item{}, err
	}
	return Item{Name: name, ID: id, Raw: out}, nil
}

// nameSkill is a skills/list entry as the vhost publishes it (the
// Skills extension, SEP-2640), named (for the merge's order) and judged
// (by access rules) by its published uri.
func (nm Naming) nameSkill(key string, item json.RawMessage, scan *ItemScan) (Item, error) {
	if nm.Single {
		uri := ""
		if scan != nil && scan.uri.count == 1 {
			uri, _ = wire.String(item[scan.uri.start:scan.uri.end])
		} else {
			uri = naming.SkillURI(item)
		}
		return Item{Name: uri, ID: uri, Raw: item}, nil
	}
	out, uri, err := naming.PublishSkill(key, item)
	if err != nil {
		return Item{}, err
	}
	return Item{Name: uri, ID: uri, Raw: out}, nil
}

// readItem finds an item's name, URI and _meta. One pass over the item's
// top level (or none: decode's, when scan is given): its bytes were
// checked when the backend's answer was decoded, and all but two members
// pass as they are, copied around the new values in one go.
func readItem(op Op, item json.RawMessage, scan *ItemScan) (_ *ItemScan, name, uri string, meta []byte, err error) {
	if scan == nil {
		scan = new(ItemScan)
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
func (nm Naming) respliceItem(op Op, key string, item json.RawMessage, name, id string, newURI, rare bool) (json.RawMessage, error) {
	quotedName := wire.Quoted(name)
	var out []byte
	if newURI {
		out, _ = wire.Splice(item, wire.Member{Key: "name", Value: quotedName}, wire.Member{Key: op.URIField, Value: wire.Quoted(id)})
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
		if op.Field == "tools" && !nm.Single {
			naming.PublishUIMeta(key, fields)
		}
		out = wire.RawObject(fields)
	}
	return out, nil
}

// errMalformedItem: a backend's list item is not an object, or its name
// or URI is not a string.
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
