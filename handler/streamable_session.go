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
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "missing Mcp-Session-Id header")
		return nil, false
	}
	if len(id) > 256 {
		writeHTTPError(w, http.StatusNotFound, codeSessionNotFound, "session not found")
		return nil, false
	}
	sess, err := s.opts.Sessions.Load(r.Context(), store.SessionID(id))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeHTTPError(w, http.StatusNotFound, codeSessionNotFound, "session not found")
		return nil, false
	case err != nil:
		s.log.Error("session lookup failed", "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
		return nil, false
	case sess.Principal != string(principal) || sess.VHost != r.PathValue("vhost"):
		writeHTTPError(w, http.StatusNotFound, codeSessionNotFound, "session not found")
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
