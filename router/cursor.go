package router

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// A federated cursor wraps every backend's own cursor in one opaque token.
//
// Wire form: base64url(JSON state) "." base64url(HMAC-SHA256(key, payload)).
// The key is shared by every instance (configured, or generated once and
// kept in the store), so a page fetched on one instance can be continued on
// any other. The MAC makes the token tamper-evident: clients cannot forge a
// cursor that points a backend at a page of their choosing, nor move a
// cursor between virtual hosts or list operations.

// cursorVersion is mixed into the MAC so a future format cannot be confused
// with this one.
const cursorVersion = "mcpgw-cursor-v1"

// cursorState is what a gateway cursor carries.
type cursorState struct {
	Op    string `json:"o"` // list method, e.g. "tools/list"
	VHost string `json:"v"`
	// Principal binds the cursor to the caller who started the walk (a
	// digest, see principalTag): another caller's cursor is refused like a
	// forged one, so a leaked cursor reveals nothing of what its owner sees.
	Principal string `json:"p"`
	// Backends is the backend set of the walk (fixed at the first page,
	// then amended: added backends join, removed ones are dropped).
	Backends map[string]backendCursor `json:"b"`
}

// backendCursor is one backend's position in the walk.
type backendCursor struct {
	Cursor string `json:"c,omitempty"` // the backend's own cursor; "" = first page
	Done   bool   `json:"d,omitempty"` // exhausted: never queried again
}

var errBadCursor = errors.New("invalid cursor")

func encodeCursor(key []byte, st *cursorState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(cursorMAC(key, p)), nil
}

// decodeCursor verifies and decodes a token. Every failure is the same
// errBadCursor: the client learns nothing about why a forged token failed.
func decodeCursor(key []byte, token string) (*cursorState, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return nil, errBadCursor
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, cursorMAC(key, p)) {
		return nil, errBadCursor
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, errBadCursor
	}
	var st cursorState
	if err := json.Unmarshal(payload, &st); err != nil || st.Op == "" || st.Backends == nil {
		return nil, errBadCursor
	}
	return &st, nil
}

// principalTag is the digest of a principal a cursor carries: short, and
// not the principal itself, since a cursor is readable by whoever holds it.
func principalTag(principal string) string {
	sum := sha256.Sum256([]byte("mcpgw-cursor-principal\x00" + principal))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// accepts reports whether a decoded cursor may continue this walk: same
// list method, same virtual host, same caller.
func (st *cursorState) accepts(op, vhost, principal string) bool {
	return st.Op == op && st.VHost == vhost && st.Principal == principalTag(principal)
}

func cursorMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cursorVersion))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}
