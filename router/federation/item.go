package federation

import (
	"encoding/json"

	"github.com/mcpgw/gateway/internal/wire"
)

// Item is a list item as published downstream, with its name and the
// identifier access rules judge (the name, or for resources and
// templates the published URI or URI template).
//
// An item whose new name (and URI) only replace the values in place is
// kept as the backend sent it, with where those values lie (edit): the
// page writes it renamed (appendTo), so an uncached page copies each item
// it sends once, into the page, and renames none it does not send. Until
// then Raw is the backend's bytes, and read only while they are. An Item
// made outside this package is published as Raw is.
type Item struct {
	Name, ID string
	Raw      json.RawMessage
	// edit: Raw is the backend's; nameAt (and uriAt, when its count is
	// not 0) are replaced by Name (and ID) as it is written.
	edit          bool
	nameAt, uriAt span32
}

// appendTo appends the item as published to b.
func (n *Item) appendTo(b []byte) []byte {
	if !n.edit {
		return append(b, n.Raw...)
	}
	a, av, c, cv := n.nameAt, n.Name, n.uriAt, n.ID
	if c.count == 0 {
		b = append(b, n.Raw[:a.start]...)
		b = wire.AppendQuoted(b, av)
		return append(b, n.Raw[a.end:]...)
	}
	if c.start < a.start {
		a, av, c, cv = c, cv, a, av
	}
	b = append(b, n.Raw[:a.start]...)
	b = wire.AppendQuoted(b, av)
	b = append(b, n.Raw[a.end:c.start]...)
	b = wire.AppendQuoted(b, cv)
	return append(b, n.Raw[c.end:]...)
}

// size is the number of bytes appendTo writes.
func (n *Item) size() int {
	if !n.edit {
		return len(n.Raw)
	}
	size := len(n.Raw) - int(n.nameAt.end-n.nameAt.start) + wire.QuotedLen(n.Name)
	if n.uriAt.count > 0 {
		size += wire.QuotedLen(n.ID) - int(n.uriAt.end-n.uriAt.start)
	}
	return size
}

// span is where a member's value lies in an item; end 0: absent.
type span struct{ start, end, count int }

// ItemScan is where the members renaming reads lie in an item's top
// level: found while a backend's page is decoded (Page.Decode), so that
// the item is not walked a second time, or by readItem. It is kept small
// (a page keeps one per item until it is renamed).
type ItemScan struct {
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
func (s *ItemScan) member(op Op, k []byte, start, end int) {
	switch {
	case string(k) == "_meta":
		s.meta.set(start, end)
	case string(k) == "name":
		s.name.set(start, end)
	case op.URIField != "" && string(k) == op.URIField:
		s.uri.set(start, end)
	}
}
