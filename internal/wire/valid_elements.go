package wire

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// A list page's answer was crossed twice: once whole, to check it is
// JSON (DecodeOwned: ValidMembers), and once more by the router, to find
// its items and their members, in a walk that skipped what it crossed
// instead of checking it. The two were about a fifth of the gateway's CPU
// per listed item (docs/design/benchmarks-history.md, issue 24). ValidMembersElementMembers
// is the router's walk checking as it goes, and DecodeOwnedChecked lets
// the decoder leave the result to such a walk, so each byte of a page is
// crossed once.

// ValidMembersElementMembers reports whether b is valid JSON whose value
// is an object, as strictly as encoding/json (ValidMembers), and walks it
// on the way: fn is called with each of its members (key and value), and
// the value of member arrayKey, when it is an array, is split in the same
// pass: elem is called with each element, and before that, for an element
// that is an object, member with each of its members (its key, and where
// its value lies within the element); fn is called with the array's member
// after its elements. A second member arrayKey is walked as the first.
// On invalid input the callbacks may have been called before false is
// returned. depth is the number of arrays and objects b lies in within
// its message (1 for a JSON-RPC result), for encoding/json's nesting
// bound.
func ValidMembersElementMembers(b []byte, depth int, arrayKey string, fn func(key string, value []byte), member func(key []byte, start, end int), elem func(item []byte)) (ok bool) {
	end := ValidMembersElementMembersAt(b, skipSpace(b, 0), depth, arrayKey, fn, member, elem)
	return end >= 0 && skipSpace(b, end) == len(b)
}

// ValidMembersElementMembersAt is ValidMembersElementMembers on the
// object starting at b[i], which need not end b: it returns the index
// just past the object, or -1 when there is no valid object there. A
// decoder hands a result to it in place (DecodeOwnedChecked).
func ValidMembersElementMembersAt(b []byte, i, depth int, arrayKey string, fn func(key string, value []byte), member func(key []byte, start, end int), elem func(item []byte)) int {
	if depth >= maxValidDepth {
		return -1
	}
	return objectAt(b, i, validString, func(key []byte, i int) int {
		if i < len(b) && b[i] == '[' && string(key) == arrayKey {
			return validElementsAt(b, i, depth+1, member, elem)
		}
		return validValue(b, i, depth+1)
	}, func(key []byte, start, end int) bool { fn(string(key), b[start:end]); return true })
}

// validElementsAt returns the index just past the array starting at b[i]
// (a bracket), which lies in depth containers, or -1 when it is not valid
// JSON, calling elem with each element and, when member is set, member
// with each member of an element that is an object, placed within it.
func validElementsAt(b []byte, i, depth int, member func(key []byte, start, end int), elem func(item []byte)) int {
	if depth >= maxValidDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return -1
		}
		var end int
		if member != nil && b[i] == '{' {
			if depth+1 >= maxValidDepth {
				return -1
			}
			at := i
			end = objectAt(b, i, validString, func(_ []byte, j int) int { return validValue(b, j, depth+2) },
				func(key []byte, start, end int) bool { member(key, start-at, end-at); return true })
		} else {
			end = validValue(b, i, depth+1)
		}
		if end < 0 {
			return -1
		}
		elem(b[i:end])
		i = skipSpace(b, end)
		switch {
		case i >= len(b):
			return -1
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == ']':
			return i + 1
		default:
			return -1
		}
	}
}

// DecodeOwnedChecked is DecodeOwned for a caller that walks a response's
// result itself and checks it in that walk: the decoder calls check with
// the message and the index where the result starts, and check returns
// the index just past the result, or -1 when it is not valid JSON, as
// strictly as ValidMembers judges it at depth 1 (a
// ValidMembersElementMembersAt walk). A message whose result check
// refuses is decoded again by encoding/json, whose verdict and error the
// caller gets, as with DecodeOwned. check is called for the result of any
// response the message holds, before the message is known to be the one
// awaited: it may be called for an answer the caller will not get.
func DecodeOwnedChecked(data []byte, check func(data []byte, i int) (end int)) (jsonrpc.Message, error) {
	var w wireMessage
	if decodeMembersChecked(data, &w, false, check) {
		msg, _, err := w.message()
		return msg, err
	}
	return Decode(data)
}
