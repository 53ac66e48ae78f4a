package sealed

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/seal"
)

// A federated cursor wraps every backend's own cursor in one opaque token.
//
// Wire form: base64url(nonce || AES-256-GCM(JSON state)), with the AES key
// derived from the cursor key, which is shared by every instance
// (configured, or generated once and kept in the store), so a page fetched
// on one instance can be continued on any other. The seal makes the token
// tamper-evident: clients cannot forge a cursor that points a backend at a
// page of their choosing, nor move a cursor between virtual hosts or list
// operations. It also makes it unreadable, which access rules need: the
// state names the backends of the walk and carries their own cursors,
// which often spell out the last item of a page (the go-sdk's do), and
// that may be a name the caller's rules hide.

// cursorVersion is mixed into the key derivation and sealed as additional
// data, so a future format cannot be confused with this one (the AEAD:
// internal/seal).
const cursorVersion = "mcpgw-cursor-v2"

// Cursor is what a gateway cursor carries.
type Cursor struct {
	Op    string `json:"o"` // list method, e.g. "tools/list"
	VHost string `json:"v"`
	// Principal binds the cursor to the caller who started the walk (a
	// digest, see PrincipalTag): another caller's cursor is refused like a
	// forged one, so a leaked cursor reveals nothing of what its owner sees.
	Principal string `json:"p"`
	// Backends is the backend set of the walk (fixed at the first page,
	// then amended: added backends join, removed ones are dropped; a
	// backend the caller's access rules hide whole is left out).
	Backends map[string]BackendCursor `json:"b"`
	// Private: a page of this walk was answered cacheScope "private"
	// (2026-07-28), so every later page is too: one walk, one scope
	// (clients such as the Python SDK v2 require it).
	Private bool `json:"s,omitempty"`
}

// BackendCursor is one backend's position in the walk.
type BackendCursor struct {
	Cursor string `json:"c,omitempty"` // the backend's own cursor; "" = first page
	Done   bool   `json:"d,omitempty"` // exhausted: never queried again
	// Offset: this many items of the page at Cursor (in the merged order)
	// were sent already, on a gateway page that was full
	// (router Options.MaxPageItems); the page is asked for again and they are
	// skipped.
	Offset int `json:"o,omitempty"`
}

// ErrBadCursor is every failure to open a cursor, whatever the cause.
var ErrBadCursor = errors.New("invalid cursor")

// SealCursor seals st under key (any length).
func SealCursor(key []byte, st *Cursor) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	box, err := seal.New(key, cursorVersion)
	if err != nil {
		return "", err
	}
	return box.SealString(payload, []byte(cursorVersion)), nil
}

// OpenCursor verifies and decodes a token. Every failure is the same
// ErrBadCursor: the client learns nothing about why a forged token failed.
func OpenCursor(key []byte, token string) (*Cursor, error) {
	box, err := seal.New(key, cursorVersion)
	if err != nil {
		return nil, ErrBadCursor
	}
	payload, ok := box.OpenString(token, []byte(cursorVersion))
	if !ok {
		return nil, ErrBadCursor
	}
	var st Cursor
	if err := json.Unmarshal(payload, &st); err != nil || st.Op == "" || st.Backends == nil {
		return nil, ErrBadCursor
	}
	return &st, nil
}

// PrincipalTag is the digest of a principal a cursor carries: short, and
// not the principal itself, which the cursor need not hold to be checked.
func PrincipalTag(principal string) string {
	sum := sha256.Sum256([]byte("mcpgw-cursor-principal\x00" + principal))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// Accepts reports whether a decoded cursor may continue this walk: same
// list method, same virtual host, same caller.
func (st *Cursor) Accepts(op, vhost, principal string) bool {
	return st.Op == op && st.VHost == vhost && st.Principal == PrincipalTag(principal)
}
