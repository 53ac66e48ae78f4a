package router

import (
	"context"
	"errors"

	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/store"
)

// A backend's own session id never reaches the store in clear (the
// project's rule for secrets): the router seals it before it names it in
// a gateway session's snapshot, a principal's record or the index of kept
// backend sessions, and opens it where it sends on that session or closes
// it (sealed/backend_session.go says how, and why randomized). In memory
// a snapshot's SessionID is the stored form; only a handshake or a DELETE
// sees the clear id. Opening uses the keys the instance knows: the reuse
// fast path pays one AEAD open per request, no store round trip.

// backendSessionKeyName names the key backend session ids are sealed
// with, in the store or derived from the configured secret.
const backendSessionKeyName = "backend-session"

// sealID is the form of backend key's session id to store; false when it
// cannot be sealed (the key could not be read): the session is then not
// kept, never stored in clear.
func (lk *backendLink) sealID(ctx context.Context, vhost, key string, id store.BackendSessionID) (store.BackendSessionID, bool) {
	stored, err := lk.sessionIDs.Seal(ctx, vhost, key, id)
	if err != nil {
		lk.log.Warn("sealing a backend session id failed; the session is not kept", "vhost", vhost, "backend", key, "error", err)
		return "", false
	}
	return stored, true
}

// openID is the backend session a stored form names: the id itself for
// one a previous version stored in clear (an upgrade keeps its backend
// sessions), "" for none and for one that does not open (another key,
// tampered with, or the key unreadable): the request then opens a fresh
// backend session, as for one the backend forgot. A sealed id that does
// not open is logged at warning level once per instance (then at debug),
// never with its value.
func (lk *backendLink) openID(ctx context.Context, vhost, key string, stored store.BackendSessionID) store.BackendSessionID {
	id, err := lk.sessionIDs.Open(ctx, vhost, key, stored)
	if err == nil {
		return id
	}
	msg := "a kept backend session id does not open; a fresh backend session is opened"
	if errors.Is(err, sealed.ErrKeyUnavailable) || lk.badIDLogged.Swap(true) {
		lk.log.Debug(msg, "vhost", vhost, "backend", key, "error", err)
	} else {
		lk.log.Warn(msg, "vhost", vhost, "backend", key, "error", err)
	}
	return ""
}
