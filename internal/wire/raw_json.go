package wire

import (
	"encoding/json"
	"slices"
	"sort"
)

// RawArray and RawObject assemble JSON from values that are valid JSON
// already (backend bytes the upstream decoder checked, or our own
// encoding): encoding/json would check and compact every byte again. RawObject
// writes the keys sorted, so equal objects are equal bytes.
func RawArray(items []json.RawMessage) json.RawMessage {
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

func RawObject(m map[string]json.RawMessage) json.RawMessage {
	return RawObjectArray(m, "", nil)
}

// RawObjectArray is RawObject of m with, when key is not empty, the
// member key set to RawArray(items), written in place: a list page's
// items, most of its bytes, are copied once instead of twice.
func RawObjectArray(m map[string]json.RawMessage, key string, items []json.RawMessage) json.RawMessage {
	return AppendRawObjectArray(nil, m, key, items)
}

// AppendRawObjectArray is RawObjectArray appended to dst, which grows
// once, to the object's size, when it lacks the room: a list page can be
// built into a buffer reused from page to page.
func AppendRawObjectArray(dst []byte, m map[string]json.RawMessage, key string, items []json.RawMessage) json.RawMessage {
	size := 0
	for _, it := range items {
		size += len(it)
	}
	return AppendRawObjectArrayFunc(dst, m, key, len(items), size, func(b []byte, i int) []byte {
		return appendRaw(b, items[i])
	})
}

// AppendRawObjectArrayFunc is AppendRawObjectArray of n items that
// appendItem writes (item i appended to b, valid JSON), about size bytes
// of them in all (what dst is grown by ahead): a list page's renamed
// items are written straight into the page, not copied there from
// copies of their own.
func AppendRawObjectArrayFunc(dst []byte, m map[string]json.RawMessage, key string, n, size int, appendItem func(b []byte, i int) []byte) json.RawMessage {
	keys := make([]string, 0, len(m)+1)
	room := 2
	for k, v := range m {
		if key != "" && k == key {
			continue
		}
		keys = append(keys, k)
		room += len(k) + len(v) + 4
	}
	if key != "" {
		keys = append(keys, key)
		room += len(key) + 6 + size + n
	}
	sort.Strings(keys)
	b := slices.Grow(dst, room)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if plainString(k) {
			b = append(b, '"')
			b = append(b, k...)
			b = append(b, '"')
		} else {
			kb, _ := json.Marshal(k)
			b = append(b, kb...)
		}
		b = append(b, ':')
		if k != key || key == "" {
			b = appendRaw(b, m[k])
			continue
		}
		b = append(b, '[')
		for j := range n {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, j)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendRaw(b []byte, v json.RawMessage) []byte {
	if len(v) == 0 {
		return append(b, "null"...)
	}
	return append(b, v...)
}
