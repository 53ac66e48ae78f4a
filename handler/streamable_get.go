package handler

import (
	"errors"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/mcpgw/gateway/handler/session"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/store"
)

// Header of the transport's resumability.
const headerLastEventID = "Last-Event-ID"

// DefaultKeepAlive is Options.KeepAlive's default.
const DefaultKeepAlive = 15 * time.Second

// retryAfter is the reconnection delay announced to clients (SSE retry).
const retryAfter = 2 * time.Second

// eventLogFailed answers a failed read of the event log: 400 for a
// Last-Event-ID the log never issued or naming a call stream it does not
// hold, 503 when the store is unreachable.
func (s *server) eventLogFailed(w http.ResponseWriter, err error, what string) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, store.ErrBadEventID):
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "Last-Event-ID names no event this session's log issued")
	case errors.Is(err, session.ErrUnknownCallStream):
		writeHTTPError(w, http.StatusBadRequest, codeInvalidRequest, "Last-Event-ID names no call stream of this session (it never existed, or its events have left the event log)")
	default:
		s.log.Error(what, "error", err)
		writeHTTPError(w, http.StatusServiceUnavailable, codeInternalError, wire.MsgStoreUnavailable)
	}
	return true
}

// serveGET opens the session's standalone SSE stream: notifications nobody
// requested (resource updates, log messages, list changes), each with an
// event id from the session's event log, so a client can resume with
// Last-Event-ID on any instance.
func (s *server) serveGET(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r.Header.Values("Accept")); !sseOK || len(r.Header.Values("Accept")) == 0 {
		writeHTTPError(w, http.StatusNotAcceptable, codeInvalidRequest, "Accept must include text/event-stream")
		return
	}
	principal, _ := auth.FromContext(r.Context())
	sess, ok := s.loadSession(w, r, principal)
	if !ok {
		return
	}
	if stream, after, ok := session.ParseCallEventID(store.EventID(r.Header.Get(headerLastEventID))); ok {
		s.resumeCall(w, r, sess.ID, stream, after)
		return
	}
	events, err := s.opts.Sessions.OpenStream(r.Context(), sess, r.Header, store.EventID(r.Header.Get(headerLastEventID)))
	if errors.Is(err, session.ErrStreamBusy) {
		writeHTTPError(w, http.StatusConflict, codeInvalidRequest, "this session already has an open GET stream")
		return
	}
	if s.eventLogFailed(w, err, "opening session stream failed") {
		return
	}
	defer events.Close()
	s.opts.Metrics.StreamOpened(metrics.StreamGET)
	defer s.opts.Metrics.StreamClosed(metrics.StreamGET)

	sw := newSSEWriter(w)
	// Priming event (2025-11-25 transport): an id and empty data, so a
	// client that loses the stream before any event can still resume.
	if err := sw.event(events.PrimeID, retryAfter, nil); err != nil {
		return
	}
	last := events.PrimeID
	for _, e := range events.Replay {
		if err := sw.event(e.ID, 0, e.Data); err != nil {
			return
		}
		last = e.ID
	}
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-events.Ended:
			return
		case e, ok := <-events.Live:
			if !ok {
				return // fell behind: the client resumes from the log
			}
			if last != "" && !store.EventIDAfter(e.ID, last) {
				continue // already replayed
			}
			if err := sw.event(e.ID, 0, e.Data); err != nil {
				return
			}
			last = e.ID
		case <-tick.C:
			if err := sw.comment("keep-alive"); err != nil {
				return
			}
		}
	}
}
