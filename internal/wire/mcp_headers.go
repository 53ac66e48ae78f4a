package wire

import (
	"encoding/base64"
	"strings"
)

// The 2026-07-28 transport mirrors parts of the body in headers
// (Mcp-Method, Mcp-Name, Mcp-Param-{X}) so intermediaries can route without
// parsing. A value that is not plain printable ASCII travels as
// "=?base64?<Base64 of its UTF-8>?=", and a literal that looks like that
// sentinel is encoded too, so every value round-trips.

const (
	headerB64Prefix = "=?base64?"
	headerB64Suffix = "?="
)

// EncodeHeaderValue encodes v for an Mcp-Name or Mcp-Param-* header: as is
// when it is safe ASCII, else in the Base64 sentinel form.
func EncodeHeaderValue(v string) string {
	if headerSafe(v) {
		return v
	}
	return headerB64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + headerB64Suffix
}

// DecodeHeaderValue decodes a header value that may be in the Base64
// sentinel form. ok is false for a sentinel whose Base64 is malformed
// (strict: padding required, no stray characters). A value with only the
// prefix or only the suffix is a literal.
func DecodeHeaderValue(h string) (v string, ok bool) {
	if !strings.HasPrefix(h, headerB64Prefix) || !strings.HasSuffix(h, headerB64Suffix) || len(h) < len(headerB64Prefix)+len(headerB64Suffix) {
		return h, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(h[len(headerB64Prefix) : len(h)-len(headerB64Suffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// headerSafe reports whether v can be sent as is: printable ASCII (space
// and tab included) with no leading or trailing whitespace, and not
// looking like the sentinel.
func headerSafe(v string) bool {
	if v == "" {
		return true
	}
	if v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return false
		}
	}
	return !(strings.HasPrefix(v, headerB64Prefix) && strings.HasSuffix(v, headerB64Suffix))
}
