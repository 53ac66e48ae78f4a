package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MCP request ids are strings or integers (the spec's RequestId; JSON-RPC
// itself only says numbers SHOULD NOT have fractions). The gateway holds
// them to that, because every looser reading changed an id: the SDK's
// jsonrpc.MakeID goes through float64, so 1.5 came back as 1, 2^53+1 as
// 2^53 and 2^63 as -2^63, and a cancel for 1 cancelled the call sent as
// 1.5. Now an id is parsed exactly or refused:
//
//   - a string: kept as text (refused when it is not valid Unicode, which
//     Go would replace with U+FFFD, so two ids could become one);
//   - an integer literal within ±(2^53−1): parsed with strconv, never
//     through float64;
//   - null, fractions (1.5, and 1.0 too), exponents (1e3), larger
//     integers, booleans, arrays, objects: invalid (-32600).
//
// Integers beyond ±(2^53−1) are refused rather than echoed: they are the
// ones JSON peers cannot all represent exactly (RFC 7493 §2.2; JavaScript
// clients cannot even send them), the SDK's jsonrpc.ID, which router,
// store bus and upstream all carry, can only be made from a float64, and
// no MCP SDK issues such ids. A clear -32600 beats a silent change.
//
// The handler echoes the id byte for byte (DecodeWithID, EncodeResponseAs);
// the parsed value is what the router matches cancellations by.

// maxExactID is the largest integer id: 2^53−1, the largest integer every
// JSON peer represents exactly.
const maxExactID = 1<<53 - 1

// ErrInvalidID marks an id that is present but not a string or an int64
// integer; errors.Is(err, ErrInvalidID) holds for every such error.
var ErrInvalidID = errors.New("invalid JSON-RPC id")

// idError is an ErrInvalidID with a message for the client.
type idError struct{ msg string }

func (e *idError) Error() string        { return e.msg }
func (e *idError) Is(target error) bool { return target == ErrInvalidID }

// ParseID parses a present id (raw is the JSON value, already known to be
// well-formed JSON, as encoding/json hands it over).
func ParseID(raw json.RawMessage) (jsonrpc.ID, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return jsonrpc.ID{}, &idError{"id must be a string or an integer"}
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, &idError{"id must be a string or an integer"}
		}
		if !lossless(raw, s) {
			return jsonrpc.ID{}, &idError{"id must be valid Unicode text"}
		}
		return jsonrpc.MakeID(s)
	case c == '-' || c >= '0' && c <= '9':
		if bytes.ContainsAny(raw, ".eE") {
			return jsonrpc.ID{}, &idError{"id " + Quote(string(raw)) + " is not an integer: MCP ids are strings or integers"}
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxExactID || n < -maxExactID {
			return jsonrpc.ID{}, &idError{"id " + Quote(string(raw)) + " is outside ±(2^53−1), the integers every JSON peer represents exactly"}
		}
		return jsonrpc.MakeID(float64(n)) // exact: |n| < 2^53
	case string(raw) == "null":
		return jsonrpc.ID{}, &idError{"id must be a string or an integer, not null (a notification has no id)"}
	default:
		return jsonrpc.ID{}, &idError{"id must be a string or an integer"}
	}
}

// lossless reports whether decoding the JSON string raw to s lost nothing.
// encoding/json replaces invalid UTF-8 and unpaired surrogate escapes with
// U+FFFD; only then can s hold U+FFFD that raw did not spell, so the check
// runs only for such strings.
func lossless(raw []byte, s string) bool {
	if !bytes.ContainsRune([]byte(s), utf8.RuneError) {
		return true
	}
	if !utf8.Valid(raw) {
		return false
	}
	// Every \uD800-\uDBFF escape must be followed by a \uDC00-\uDFFF one,
	// and no low surrogate may stand alone.
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false
		case r >= 0xD800 && r <= 0xDBFF:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(raw[i+3:])
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}
