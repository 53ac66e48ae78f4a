package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// EventLog is each session's bounded, ordered log of SSE events, shared by
// the session's GET stream and the calls answered as streams: a client
// that reconnects to any instance with Last-Event-ID is sent what follows
// from the log. The router's session stream appends GET-stream events and
// replays them (AppendEvent, EventsAfter, LatestEventID); its resumable
// calls log their streams (StartCallStream, AppendStreamEvent,
// EndCallStream) and resume them (CallStreamEventsAfter; see
// call_streams.go). The log has its own TTL, refreshed by each append.
type EventLog interface {
	// AppendEvent appends an SSE event to the session's bounded event log
	// (at most maxLen events, oldest dropped) and returns its event id.
	// ErrNotFound if the session is absent.
	AppendEvent(ctx context.Context, id SessionID, data []byte, maxLen int, ttl time.Duration) (EventID, error)
	// AppendStreamEvent is AppendEvent for an event of one of the session's
	// other streams (a call's answer streamed on its POST), tagged with
	// that stream's id so readers can tell the streams apart. The log and
	// its ids are shared: ids order every stream's events together.
	AppendStreamEvent(ctx context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error)
	// EventsAfter returns the events logged after eventID (exclusive),
	// oldest first, at most limit (limit < 1: no limit). An id older than
	// the oldest retained event returns all retained events; a missing
	// session or log returns none. ErrBadEventID for an id that is not of
	// the form the log issues ("<digits>-<digits>").
	EventsAfter(ctx context.Context, id SessionID, eventID EventID, limit int) ([]Event, error)

	// LatestEventID returns the id of the newest logged event, or "0-0"
	// when the log is empty: the position a new stream starts from.
	LatestEventID(ctx context.Context, id SessionID) (EventID, error)

	// StartCallStream logs the first event of call stream `stream` (tagged
	// as AppendStreamEvent tags it) with the call's request id (JSON text),
	// and gives the stream a lease of leaseTTL, in one step (see
	// call_streams.go). ErrNotFound if the session is absent.
	StartCallStream(ctx context.Context, id SessionID, stream CallStreamID, requestID, data []byte, maxLen int, leaseTTL, ttl time.Duration) (EventID, error)
	// EndCallStream logs the call's answer as the stream's last event and
	// drops its lease, in one step. ErrNotFound if the session is absent.
	EndCallStream(ctx context.Context, id SessionID, stream CallStreamID, data []byte, maxLen int, ttl time.Duration) (EventID, error)
	// CallStreamEventsAfter returns what is known of call stream `stream`
	// and its logged events after eventID (at most limit; < 1: no limit),
	// the lease read before the log. ErrNotFound when the log holds no
	// event of the stream; ErrBadEventID for an id the log never issued
	// (malformed, or after the newest event).
	CallStreamEventsAfter(ctx context.Context, id SessionID, stream CallStreamID, eventID EventID, limit int) (*CallStream, []Event, error)
}

// ErrBadEventID is returned for a Last-Event-ID the event log never issued.
var ErrBadEventID = errors.New("store: malformed event id")

// Event is one entry of a session's event log.
type Event struct {
	ID   EventID
	Data []byte
	// Stream is the id of the stream the event belongs to: "" for the
	// session's GET stream, else the tag given to AppendStreamEvent.
	Stream CallStreamID
}

// The event log's ids are the one event-id format of the gateway: the SSE
// ids clients send back in Last-Event-ID, and the positions streams resume
// from. Only this file parses or orders them; callers compare ids with
// EventIDAfter and check a client's with CheckResumeID.

// eventID is a parsed event id "<ms>-<seq>", the format of Redis stream
// entry ids, which the Memory store issues too.
type eventID struct{ ms, seq uint64 }

// parseEventID accepts exactly ^\d+-\d+$ with both parts fitting in 64
// bits (the range Redis accepts); anything else is ErrBadEventID.
func parseEventID(s EventID) (eventID, error) {
	msText, seqText, ok := strings.Cut(string(s), "-")
	if !ok || !allDigits(msText) || !allDigits(seqText) {
		return eventID{}, ErrBadEventID
	}
	ms, err1 := strconv.ParseUint(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if err1 != nil || err2 != nil {
		return eventID{}, ErrBadEventID
	}
	return eventID{ms, seq}, nil
}

func (e eventID) id() EventID {
	return EventID(strconv.FormatUint(e.ms, 10) + "-" + strconv.FormatUint(e.seq, 10))
}

func (e eventID) after(o eventID) bool {
	return e.ms > o.ms || (e.ms == o.ms && e.seq > o.seq)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// EventIDAfter reports whether event id a comes after event id b in log
// order: ids order every stream's events of a session together, so a
// stream that replays the log and then follows it live skips what it has
// already sent. An id that is not of the log's form comes after nothing,
// and every id of the log's form comes after it.
func EventIDAfter(a, b EventID) bool {
	x, err := parseEventID(a)
	if err != nil {
		return false
	}
	y, err := parseEventID(b)
	return err != nil || x.after(y)
}

// resumeSkew is how far past this process's clock an event id may lie and
// still be one the log issued: Redis stamps ids with its own clock.
const resumeSkew = time.Minute

// checkResumeID reports ErrBadEventID for an id the log never issued: one
// that is malformed, after the newest retained event, or, when the log
// holds nothing (it may have expired), stamped in the future.
func checkResumeID(id, newest EventID, now time.Time) error {
	e, err := parseEventID(id)
	if err != nil {
		return err
	}
	if newest != "" && newest != "0-0" {
		n, err := parseEventID(newest)
		if err == nil && e.after(n) {
			return ErrBadEventID
		}
		return nil
	}
	if e.ms > uint64(max(now.Add(resumeSkew).UnixMilli(), 0)) {
		return ErrBadEventID
	}
	return nil
}

// CheckResumeID reports ErrBadEventID for a Last-Event-ID the log never
// issued, given the log's newest id as LatestEventID returns it ("0-0" for
// an empty log).
func CheckResumeID(id, newest EventID) error { return checkResumeID(id, newest, time.Now()) }
