package wire

import (
	"encoding/json"
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
		b = append(b, Quoted(k)...)
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
