package router

import (
	"context"
	"strings"

	"github.com/mcpgw/gateway/store"
)

// A call answered as an event stream (progress, server-to-client requests,
// or a long call kept alive) is resumable like the GET stream: each of its
// events is appended to the session's event log, tagged with the call
// stream's id, before it is sent, and carries the SSE id
// "<stream>_<log id>". A client whose connection drops reconnects with a
// GET and that id as Last-Event-ID, on any instance, and gets the rest of
// that call's events, the answer last. The call itself keeps running on
// the instance that started it (losing the connection is not a cancel).

// callEventSep joins a call stream's id and a log id in an SSE event id;
// log ids ("<ms>-<seq>") never contain it.
const callEventSep = "_"

// CallEventID is the SSE id of a call stream's event.
func CallEventID(stream, logID string) string { return stream + callEventSep + logID }

// ParseCallEventID splits an SSE id made by CallEventID; ok is false for
// any other id (such as the GET stream's).
func ParseCallEventID(id string) (stream, logID string, ok bool) {
	stream, logID, ok = strings.Cut(id, callEventSep)
	return stream, logID, ok && stream != "" && logID != ""
}

// NewCallStreamID names a new call stream.
func NewCallStreamID() string { return newRandomID("c") }

// LogCallEvent appends one event of call stream stream to the session's
// log and returns its log id.
func (r *Router) LogCallEvent(ctx context.Context, sid, stream string, data []byte) (string, error) {
	return r.opts.Store.AppendStreamEvent(ctx, sid, stream, data, r.opts.EventLogSize, r.opts.SessionTTL)
}

// CallEventsAfter returns the logged events of call stream stream after
// log id after, oldest first. store.ErrBadEventID for a malformed id.
func (r *Router) CallEventsAfter(ctx context.Context, sid, stream, after string) ([]store.Event, error) {
	evs, err := r.opts.Store.EventsAfter(ctx, sid, after, r.opts.EventLogSize)
	if err != nil {
		return nil, err
	}
	out := evs[:0]
	for _, e := range evs {
		if e.Stream == stream {
			out = append(out, e)
		}
	}
	return out, nil
}
