package wire

import (
	"strconv"
	"unicode/utf8"
)

// MaxQuoted bounds the client input Quote puts in an error message, in
// bytes of the quoted text (quotes and escapes included). Error messages
// name what was wrong ("unknown tool ..."), so some of the input must be
// in them; all of it must not be: a client sending a 1 MB tool name got a
// 1 MB error back, and logs and every proxy in between paid for it.
const MaxQuoted = 200

// Quote quotes client input for an error message, Go-style (%q): at most
// MaxQuoted bytes of it, escapes included; longer input is cut on a
// character boundary and followed by how long it was. Every error message
// the handler and the router build from client input goes through it.
func Quote(s string) string {
	// Fast path: strconv escapes one input byte into at most 4 bytes
	// (\xNN), 2 quotes around.
	if 2+4*len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	if q := strconv.Quote(s); len(q) <= MaxQuoted {
		return q
	}
	b := make([]byte, 0, MaxQuoted+32)
	b = append(b, '"')
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		// One character (or invalid byte), escaped as strconv would,
		// without its quotes.
		piece := strconv.Quote(s[i : i+n])
		piece = piece[1 : len(piece)-1]
		if len(b)+len(piece)+1 > MaxQuoted {
			break
		}
		b = append(b, piece...)
		i += n
	}
	b = append(b, '"')
	b = append(b, "... ("...)
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, " bytes)"...)
	return string(b)
}

// Clip cuts client input to at most MaxQuoted bytes, on a character
// boundary, for places that carry it as a value rather than in a message
// (the "requested" version of an unsupported-version error's data).
func Clip(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	end := MaxQuoted
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}
