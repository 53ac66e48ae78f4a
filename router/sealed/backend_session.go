package sealed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mcpgw/gateway/internal/seal"
	"github.com/mcpgw/gateway/store"
)

// A backend's own session id (the Mcp-Session-Id a backend issued the
// gateway) is bearer-like: whoever holds it and reaches the backend acts
// in that backend session. The gateway keeps the ids of the backend
// sessions it keeps in the shared store (a gateway session's snapshots, a
// principal's record, the index of kept sessions), so they are kept there
// sealed, never in clear: AES-GCM under a key every instance shares (Key),
// bound to the virtual host and backend (additional data), so a sealed id
// does not open as another backend's.
//
// The seal is randomized (a fresh nonce each time), so the store learns
// nothing of an id, not even that two records name the same one. What
// compares ids in the store (a principal record's compare-and-swap, the
// check that an indexed session is still kept) compares the stored form:
// the router seals an id once, writes that same string everywhere it
// names the session, and hands back the form it read when it swaps. A
// deterministic seal would have let it seal again instead, at the price
// of revealing equality and of comparisons failing across a key change.
//
// A sealed id starts with backendSessionPrefix. An id without it is one
// a previous version stored in clear: it is used as read (an upgrade
// loses no kept backend session) and is never written back in clear by
// this version, which stores only ids it sealed.

// backendSessionVersion names the purpose in the key derivation.
const backendSessionVersion = "mcpgw-backend-session-v1"

// backendSessionPrefix marks a sealed id. A backend's own id is visible
// ASCII of its choosing; one beginning with this is not expected, and would
// only cost that backend session (it reads as not opening: a fresh one).
const backendSessionPrefix = "mcpgw-sealed-v1."

// ErrBadBackendSession is a stored id that looks sealed but does not
// open: another key, another backend's, or tampered with.
var ErrBadBackendSession = errors.New("a kept backend session id does not open")

// BackendSessions seals and opens backend session ids with one shared key.
// It is safe for concurrent use.
type BackendSessions struct {
	key *Key

	mu    sync.Mutex
	boxes []keyBox // the AEAD of each key seen, newest first; at most maxKnownKeys+1
}

// keyBox is the AEAD derived from one key, kept so that opening an id
// (each request of a reused backend session) does not derive it again.
type keyBox struct {
	key []byte
	box *seal.Box
}

// NewBackendSessions seals backend session ids under key.
func NewBackendSessions(key *Key) *BackendSessions {
	return &BackendSessions{key: key}
}

// Sealed reports whether a stored id is in the sealed form.
func Sealed(stored store.BackendSessionID) bool {
	return strings.HasPrefix(string(stored), backendSessionPrefix)
}

// Seal is the form of backend's session id to store: sealed under the
// key the store holds now. "" stays "". An error wraps ErrKeyUnavailable.
func (s *BackendSessions) Seal(ctx context.Context, vhost, backend string, id store.BackendSessionID) (store.BackendSessionID, error) {
	if id == "" {
		return "", nil
	}
	key, err := s.key.Sign(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: backend-session key: %w", ErrKeyUnavailable, err)
	}
	box, err := s.box(key)
	if err != nil {
		return "", err
	}
	return store.BackendSessionID(backendSessionPrefix + box.SealString([]byte(id), backendSessionAD(vhost, backend))), nil
}

// Open is the id a stored form names: "" for "", the id itself for one a
// previous version stored in clear, ErrBadBackendSession for a sealed form
// that does not open, an error wrapping ErrKeyUnavailable when the key
// had to be read from the store and could not be. The keys this instance
// knows are tried first: no store round trip in the common case.
func (s *BackendSessions) Open(ctx context.Context, vhost, backend string, stored store.BackendSessionID) (store.BackendSessionID, error) {
	text, ok := strings.CutPrefix(string(stored), backendSessionPrefix)
	if !ok {
		return stored, nil // "" or a clear id from a previous version
	}
	ad := backendSessionAD(vhost, backend)
	var plain []byte
	opened, err := s.key.Verify(ctx, func(key []byte) bool {
		box, err := s.box(key)
		if err != nil {
			return false
		}
		plain, ok = box.OpenString(text, ad)
		return ok && len(plain) > 0
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: backend-session key: %w", ErrKeyUnavailable, err)
	case !opened:
		return "", ErrBadBackendSession
	}
	return store.BackendSessionID(plain), nil
}

// box is key's AEAD, derived once per key.
func (s *BackendSessions) box(key []byte) (*seal.Box, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, kb := range s.boxes {
		if bytes.Equal(kb.key, key) {
			return kb.box, nil
		}
	}
	box, err := seal.New(key, backendSessionVersion)
	if err != nil {
		return nil, err
	}
	s.boxes = append([]keyBox{{key: key, box: box}}, s.boxes...)
	if len(s.boxes) > maxKnownKeys+1 {
		s.boxes = s.boxes[:maxKnownKeys+1]
	}
	return box, nil
}

func backendSessionAD(vhost, backend string) []byte {
	return []byte(backendSessionVersion + "\x00" + vhost + "\x00" + backend)
}
