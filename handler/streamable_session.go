package handler

import (
	"errors"
	"net/http"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/store"
)

// loadSession finds the request's session and checks it belongs to the
// caller and to this virtual host. A session of another principal or vhost
// gets the same 404 as an unknown id, so ids cannot be probed. On failure
// the response is written and ok is false.
func (s *server) loadSession(w http.ResponseWriter, r *http.Request, principal auth.Principal) (*store.Session, bool) {
	id := r.Header.Get(headerSessionID)
	noteOf(w).setSession(id)
	if id == "" {
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, missingSession)
		return nil, false
	}
	if len(id) > 256 {
		s.refuseUnknownSession(w, "session id longer than 256 bytes")
		return nil, false
	}
	sess, err := s.opts.Sessions.Load(r.Context(), store.SessionID(id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.refuseUnknownSession(w, "no such session in the store (expired, deleted, or another store)")
		return nil, false
	case err != nil:
		s.log.Error("session lookup failed", "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
		return nil, false
	case sess.Principal != string(principal):
		s.refuseUnknownSession(w, "the session belongs to another principal")
		return nil, false
	case sess.VHost != r.PathValue("vhost"):
		s.refuseUnknownSession(w, "the session belongs to virtual host "+wire.Quote(sess.VHost))
		return nil, false
	}
	return sess, true
}

// serveDELETE ends a session: every store key of it is removed, and later
// requests with its id get 404 on every instance.
func (s *server) serveDELETE(w http.ResponseWriter, r *http.Request) {
	principal, _ := auth.FromContext(r.Context())
	sess, ok := s.loadSession(w, r, principal)
	if !ok {
		return
	}
	if err := s.opts.Sessions.DeleteSession(r.Context(), sess); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("session delete failed", "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
