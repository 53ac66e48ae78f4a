package wire

import "encoding/json"

// A gateway reads a few members of objects it otherwise passes on: the
// params of a request it forwards, their _meta. The message was checked
// as JSON when it was decoded, so these read its members where they lie
// (Members) instead of decoding every value again with encoding/json,
// which validates, copies and allocates for bytes it never looks at.

// Object is raw's members, each value the bytes it came as (they share
// raw's memory: replace a member, never write into one). Absent or null
// is the empty object; ok is false for anything but an object.
func Object(raw []byte) (m map[string]json.RawMessage, ok bool) {
	m = map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return m, true
	}
	ok = Members(raw, func(key string, value []byte) bool {
		m[key] = value
		return true
	})
	return m, ok
}

// MemberValue is the value of raw's member key (the last one of that name, as
// encoding/json reads it); ok is false when raw has none or is not an
// object.
func MemberValue(raw []byte, key string) (value []byte, ok bool) {
	MembersBytes(raw, func(k, v []byte) bool {
		if string(k) == key {
			value, ok = v, true
		}
		return true
	})
	return value, ok
}
