package wire

import (
	"encoding/binary"
	"math/bits"
)

// A backend's answer was read twice: json.Valid checked it whole (a byte
// at a time through encoding/json's state machine, 100–200 MB/s), then
// Members walked its top level again to find the result. ValidMembers
// does both in one pass, and reads the inside of strings, most of a list
// page's bytes, eight bytes at a time.
//
// It is as strict as encoding/json (RFC 8259): the same literals, numbers,
// escapes and whitespace, control characters refused inside strings, the
// same nesting bound; and, like json.Valid, it does not check that the
// bytes of a string are valid UTF-8 (encoding/json accepts them, and
// replaces them with U+FFFD only when it decodes a string into a Go
// value; the gateway forwards them as they came). FuzzMembers holds it to
// json.Valid on the same input.

// maxValidDepth is encoding/json's nesting bound: a value nested deeper is
// refused ("exceeded max depth").
const maxValidDepth = 10000

// ValidMembers reports whether b is valid JSON whose value is an object,
// calling fn with each of its top-level members on the way: its key,
// decoded and valid only during the call, and its value's bytes (shared
// with b). When fn returns false the walk stops there and ok is true,
// without the rest of b having been checked.
func ValidMembers(b []byte, fn func(key, value []byte) bool) (ok bool) {
	return membersWith(b, validString, func(_ []byte, i int) int { return validValue(b, i, 1) },
		func(key []byte, start, end int) bool { return fn(key, b[start:end]) })
}

// Valid is json.Valid in one pass of ValidMembers' scanner.
func Valid(b []byte) bool {
	i := skipSpace(b, 0)
	end := validValue(b, i, 0)
	return end >= 0 && skipSpace(b, end) == len(b)
}

// validValue returns the index just past the valid JSON value starting at
// b[i], or -1 when there is none there or it is not valid. depth is the
// number of arrays and objects the value is inside.
func validValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		return validContainer(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return -1
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validContainer checks the object or array starting at b[i] without
// recursion: stack holds whether each open container is an object, so
// a value nested 10,000 deep costs bytes, not 10,000 frames.
func validContainer(b []byte, i, depth int) int {
	var small [64]bool
	stack := small[:0]
	for {
		// b[i] opens a container.
		if depth+len(stack) >= maxValidDepth {
			return -1
		}
		obj := b[i] == '{'
		stack = append(stack, obj)
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return -1
		}
		if c := b[i]; obj && c == '}' || !obj && c == ']' {
			stack = stack[:len(stack)-1] // empty
			i++
			goto closed
		}
	value:
		// b[i] begins a member (object) or an element (array).
		if stack[len(stack)-1] {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = validString(b, i); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
		if i >= len(b) {
			return -1
		}
		if c := b[i]; c == '{' || c == '[' {
			continue // open it
		}
		if i = validValue(b, i, depth+len(stack)); i < 0 {
			return -1
		}
	closed:
		// Just past a complete value: a comma, or the end of the
		// container it is in.
		for {
			if len(stack) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			obj := stack[len(stack)-1]
			switch c := b[i]; {
			case c == ',':
				i = skipSpace(b, i+1)
				goto value
			case obj && c == '}' || !obj && c == ']':
				stack = stack[:len(stack)-1]
				i++
			default:
				return -1
			}
		}
	}
}

// validNumber returns the index just past the number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, or -1.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// validString returns the index just past the valid string token starting
// at b[i] (a quote), or -1. The plain bytes between escapes are crossed
// eight at a time: a word stops the run when one of its bytes is a quote,
// a backslash or a control character (below 0x20).
func validString(b []byte, i int) int {
	i++
	for {
		for len(b)-i >= 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			// A byte of special has its high bit set at the first byte
			// that is '"', '\\' or < 0x20 (bytes after it may be marked
			// falsely by the borrow: only the lowest mark counts).
			q := w ^ ('"' * ones)
			s := w ^ ('\\' * ones)
			special := ((q - ones) &^ q) | ((s - ones) &^ s) | (w - 0x20*ones)
			special &= highs &^ w
			if special != 0 {
				i += bits.TrailingZeros64(special) / 8
				break
			}
			i += 8
		}
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash: one of the escapes RFC 8259 allows.
		if i+1 >= len(b) {
			return -1
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
				return -1
			}
			i += 6
		default:
			return -1
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
