package wire

import (
	"bytes"
	"encoding/json"
)

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

// WithMember is the object obj with member key set to val (valid JSON the
// caller made): replaced where it stands, or added last; every other
// member byte for byte. ok is false, and obj returned as it is, when obj
// is not a well-formed object.
func WithMember(obj []byte, key string, val []byte) (_ []byte, ok bool) {
	has, members := false, 0
	if !MembersBytes(obj, func(k, _ []byte) bool {
		members++
		has = has || string(k) == key
		return true
	}) {
		return obj, false
	}
	if has {
		return Splice(obj, Member{Key: key, Value: val})
	}
	end := bytes.LastIndexByte(obj, '}')
	out := make([]byte, 0, len(obj)+len(key)+len(val)+4)
	out = append(out, obj[:end]...)
	if members > 0 {
		out = append(out, ',')
	}
	out = append(out, Quoted(key)...)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, obj[end:]...), true
}
