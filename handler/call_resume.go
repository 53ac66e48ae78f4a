package handler

import (
	"net/http"
	"time"

	"github.com/mcpgw/gateway/handler/session"

	"github.com/mcpgw/gateway/internal/metrics"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpgw/gateway/store"
)

const (
	// callResumePoll is how often a resumed call stream looks for new
	// events in the log (the call runs on whichever instance started it).
	callResumePoll = 250 * time.Millisecond
	// callResumeIdle ends a resumed call stream that has had no event for
	// this long; the client may resume again.
	callResumeIdle = 5 * time.Minute
)

// resumeCall serves a GET whose Last-Event-ID names an event of a call's
// streamed answer: the call's later events, from the session's log, until
// its answer. The call keeps running where it started; this instance only
// reads the log.
func (s *server) resumeCall(w http.ResponseWriter, r *http.Request, sid store.SessionID, stream store.CallStreamID, after store.EventID) {
	rt := s.opts.Sessions
	evs, err := rt.CallEventsAfter(r.Context(), sid, stream, after)
	if s.eventLogFailed(w, err, "reading a call's events failed") {
		return
	}
	s.opts.Metrics.StreamOpened(metrics.StreamPOST)
	defer s.opts.Metrics.StreamClosed(metrics.StreamPOST)
	sw := newSSEWriter(w)
	sw.start(nil)
	poll := time.NewTicker(callResumePoll)
	defer poll.Stop()
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	idle := time.NewTimer(callResumeIdle)
	defer idle.Stop()
	for {
		for _, e := range evs {
			after = e.ID
			if len(e.Data) == 0 {
				continue // a priming event: a position, nothing to send
			}
			if sw.event(session.CallEventID(stream, e.ID), 0, e.Data) != nil {
				return
			}
			if isResponse(e.Data) {
				return // the call's answer ends its stream
			}
			idle.Reset(callResumeIdle)
		}
		evs = nil
		select {
		case <-r.Context().Done():
			return
		case <-idle.C:
			return
		case <-keep.C:
			if sw.comment("keep-alive") != nil {
				return
			}
			continue
		case <-poll.C:
		}
		if evs, err = rt.CallEventsAfter(r.Context(), sid, stream, after); err != nil {
			return // the client resumes again
		}
	}
}

func isResponse(data []byte) bool {
	msg, err := wire.Decode(data)
	_, ok := msg.(*jsonrpc.Response)
	return err == nil && ok
}
