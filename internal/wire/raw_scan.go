package wire

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// A gateway mostly forwards JSON it has already parsed once: a backend's
// answer is checked whole when Decode reads it, so its result's members
// and a list's items need no second validation, only finding. Members and
// Elements walk the top level of such a value in one pass, without
// decoding what they skip, and Splice rewrites members in place: a list
// page of 10,000 tools is renamed in a few passes over its bytes instead
// of the eight encoding/json makes (validate, decode, re-encode, compact).
//
// They are safe on any input (malformed JSON makes them report false,
// never panic or read past the end), but only exact on valid JSON: on
// invalid input they may accept what encoding/json would refuse. Callers
// hand them bytes a decoder has checked.

// Members calls fn with each member of the JSON object b, in order: its
// key, decoded, and its value's bytes. It stops early when fn returns
// false. ok is false when b is not a well-formed object.
func Members(b []byte, fn func(key string, value []byte) bool) (ok bool) {
	return members(b, func(key []byte, start, end int) bool { return fn(string(key), b[start:end]) })
}

// MembersBytes is Members with each key as bytes, valid only during the
// call to fn: a walk that only compares keys allocates nothing for them.
func MembersBytes(b []byte, fn func(key, value []byte) bool) (ok bool) {
	return members(b, func(key []byte, start, end int) bool { return fn(key, b[start:end]) })
}

// MembersAt is MembersBytes with each value's place in b (b[start:end]),
// for a caller that rewrites a member while it walks (renaming a list
// item: one walk, then one copy, instead of a walk and Splice's).
func MembersAt(b []byte, fn func(key []byte, start, end int) bool) (ok bool) {
	return members(b, fn)
}

// members is Members with each value's place in b.
func members(b []byte, fn func(key []byte, start, end int) bool) (ok bool) {
	return membersWith(b, skipString, func(_ []byte, i int) int { return skipValue(b, i) }, fn)
}

// membersWith is members with str finding where the key string starting at
// b[i] ends and value where the value starting at b[i] ends (-1: it does
// not): skipping them (members) or validating them (ValidMembers).
func membersWith(b []byte, str func(b []byte, i int) int, value func(key []byte, i int) int, fn func(key []byte, start, end int) bool) (ok bool) {
	switch end := objectAt(b, skipSpace(b, 0), str, value, fn); end {
	case stopped:
		return true
	case -1:
		return false
	default:
		return skipSpace(b, end) == len(b)
	}
}

// stopped is objectAt's answer when fn stopped the walk.
const stopped = -2

// objectAt walks the object starting at b[i] as membersWith does and
// returns the index just past it: -1 when it is not an object or does not
// end well, stopped when fn returned false.
func objectAt(b []byte, i int, str func(b []byte, i int) int, value func(key []byte, i int) int, fn func(key []byte, start, end int) bool) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end := str(b, i)
		if end < 0 {
			return -1
		}
		key, ok := unquoteBytes(b[i:end])
		if !ok {
			return -1
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i = skipSpace(b, i+1)
		vend := value(key, i)
		if vend < 0 {
			return -1
		}
		if !fn(key, i, vend) {
			return stopped
		}
		i = skipSpace(b, vend)
		switch {
		case i >= len(b):
			return -1
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == '}':
			return i + 1
		default:
			return -1
		}
	}
}

// Elements calls fn with each element of the JSON array b, in order,
// until fn returns false. ok is false when b is not a well-formed array.
func Elements(b []byte, fn func(value []byte) bool) (ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		end := skipValue(b, i)
		if end < 0 {
			return false
		}
		if !fn(b[i:end]) {
			return true
		}
		i = skipSpace(b, end)
		switch {
		case i >= len(b):
			return false
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == ']':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// Member is one member of a JSON object: a key and its value's bytes.
type Member struct {
	Key   string
	Value []byte
}

// Splice returns the object b with the value of every member whose key
// is one of repl's replaced by that one's value (valid JSON the caller
// made), the rest byte for byte, members in their order. ok is false when
// b is not a well-formed object; b is then returned as it is.
func Splice(b []byte, repl ...Member) (out []byte, ok bool) {
	n := len(b)
	for _, r := range repl {
		n += len(r.Value)
	}
	out = make([]byte, 0, n)
	last := 0
	ok = members(b, func(key []byte, start, end int) bool {
		for _, r := range repl {
			if r.Key == string(key) {
				out = append(out, b[last:start]...)
				out = append(out, r.Value...)
				last = end
				break
			}
		}
		return true
	})
	if !ok {
		return b, false
	}
	return append(out, b[last:]...), true
}

// String decodes a JSON string value; ok is false for any other value.
func String(value []byte) (s string, ok bool) {
	if len(value) < 2 || value[0] != '"' {
		return "", false
	}
	if skipString(value, 0) != len(value) {
		return "", false
	}
	return unquote(value)
}

// unquoteBytes is unquote without a copy for a plain string: the bytes
// between the quotes.
func unquoteBytes(tok []byte) ([]byte, bool) {
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			s, ok := unquote(tok)
			return []byte(s), ok
		}
	}
	return inner, true
}

// unquote decodes a complete JSON string token (quotes included).
func unquote(tok []byte) (string, bool) {
	inner := tok[1 : len(tok)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string token starting at
// b[i] (a quote), or -1 when it does not end. The bytes between escapes
// are crossed eight at a time (as validString does, without its checks):
// the strings of a list item are short, and two IndexByte calls a
// string, one for the quote and one for a backslash before it, cost more
// than the bytes.
func skipString(b []byte, i int) int {
	i++
	for {
		for len(b)-i >= 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ ('"' * ones)
			s := w ^ ('\\' * ones)
			if m := ((q-ones)&^q | (s-ones)&^s) & highs; m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return -1
		}
		if b[i] == '"' {
			return i + 1
		}
		i += 2 // the escaped byte (a \uXXXX's digits are plain bytes)
	}
}

// skipValue returns the index just past the value starting at b[i], or
// -1 when there is none or it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := skipString(b, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if i == start {
				return -1
			}
			return i
		case '"', '{', '[', ':':
			return -1
		}
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// Quoted is the JSON string token of s.
func Quoted(s string) []byte {
	return AppendQuoted(make([]byte, 0, len(s)+2), s)
}

// AppendQuoted appends the JSON string token of s to b: Quoted written
// where it goes (a renamed list item's name, straight into the page).
func AppendQuoted(b []byte, s string) []byte {
	if plainString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// QuotedLen is len(Quoted(s)), without writing it when s needs no
// escaping.
func QuotedLen(s string) int {
	if plainString(s) {
		return len(s) + 2
	}
	q, _ := json.Marshal(s)
	return len(q)
}

// plainString: s needs no escaping in JSON (nor encoding/json's HTML
// escaping, so Quoted is byte for byte what json.Marshal writes).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
