package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A call answered as an event stream (progress, server-to-client requests,
// or a long call kept alive) is resumable like the GET stream: each of its
// events is appended to the session's event log, tagged with the call
// stream's id, before it is sent, and carries the SSE id
// "<stream>_<log id>". A client whose connection drops reconnects with a
// GET and that id as Last-Event-ID, on any instance, and gets the rest of
// that call's events, the answer last. The call itself keeps running on
// the instance that started it (losing the connection is not a cancel).
//
// That instance holds a lease on the stream while the call runs (see
// store/call_streams.go). If it dies, the lease lapses within
// CallLeaseTTL and a resume, finding no answer in the log, ends with a
// -32603 error for the call's request id instead of waiting for an answer
// that will never come.

// callEventSep joins a call stream's id and a log id in an SSE event id;
// log ids ("<ms>-<seq>") never contain it.
const callEventSep = "_"

// CallEventID is the SSE id of a call stream's event.
func CallEventID(stream store.CallStreamID, logID store.EventID) store.EventID {
	return store.EventID(string(stream) + callEventSep + string(logID))
}

// ParseCallEventID splits an SSE id made by CallEventID; ok is false for
// any other id (such as the GET stream's).
func ParseCallEventID(id store.EventID) (stream store.CallStreamID, logID store.EventID, ok bool) {
	s, l, ok := strings.Cut(string(id), callEventSep)
	return store.CallStreamID(s), store.EventID(l), ok && s != "" && l != ""
}

// ErrUnknownCallStream is returned for a resume naming a call stream the
// session's log holds no event of: it never existed, or has been trimmed.
var ErrUnknownCallStream = errors.New("no such call stream in the session's event log")

// CallLog logs the events of one call answered as an event stream. The
// stream is named, recorded and leased when its first event is logged
// (most calls never stream); from then on a goroutine renews the lease
// until End or Close, which wait for it. A CallLog is not safe for
// concurrent use: the call's stream writes one event at a time.
type CallLog struct {
	rt    *Runtime
	sid   store.SessionID
	reqID json.RawMessage

	stream store.CallStreamID // "" until the first event
	closed bool               // End or Close has run
	ending atomic.Bool        // End is dropping the lease: a refused renewal is no lapse
	stop   chan struct{}      // closed by Close: the renewer returns
	done   chan struct{}      // closed when the renewer has returned
}

// NewCallLog prepares the log of call reqID of session sid. Nothing is
// stored until Append.
func (rt *Runtime) NewCallLog(sid store.SessionID, reqID jsonrpc.ID) *CallLog {
	raw, _ := json.Marshal(reqID.Raw())
	return &CallLog{rt: rt, sid: sid, reqID: raw}
}

// Append logs one event (nil data: a priming event) and returns its SSE id.
func (l *CallLog) Append(ctx context.Context, data []byte) (store.EventID, error) {
	rt := l.rt
	switch {
	case l.closed:
		return "", errCallLogEnded
	case l.stream != "":
		id, err := rt.store.AppendStreamEvent(ctx, l.sid, l.stream, data, rt.opts.EventLogSize, rt.opts.SessionTTL)
		if err != nil {
			return "", err
		}
		return CallEventID(l.stream, id), nil
	}
	stream := store.NewCallStreamID()
	id, err := rt.store.StartCallStream(ctx, l.sid, stream, l.reqID, data, rt.opts.EventLogSize, rt.opts.CallLeaseTTL, rt.opts.SessionTTL)
	if err != nil {
		return "", err
	}
	l.stream = stream
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.renew(l.stop, l.done)
	return CallEventID(stream, id), nil
}

// End logs the call's answer as the stream's last event, drops the lease
// and returns the answer's SSE id. Without an earlier event there is no
// stream: End logs nothing and returns "".
func (l *CallLog) End(ctx context.Context, data []byte) (store.EventID, error) {
	if l.closed || l.stream == "" {
		l.Close()
		return "", nil
	}
	rt := l.rt
	l.ending.Store(true)
	id, err := rt.store.EndCallStream(ctx, l.sid, l.stream, data, rt.opts.EventLogSize, rt.opts.SessionTTL)
	l.Close()
	if err != nil {
		return "", err
	}
	return CallEventID(l.stream, id), nil
}

// Close stops renewing the lease (which then lapses: a resume ends with
// an error unless the answer was logged) and waits for the renewer.
// Idempotent.
func (l *CallLog) Close() {
	if l.closed {
		return
	}
	l.closed = true
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
}

var errCallLogEnded = errors.New("the call's event stream has ended")

// renew keeps the stream's lease while the call runs. A renewal the store
// refuses (the lease lapsed during a store outage) is not retried: resumes
// may already have ended the stream with an error.
func (l *CallLog) renew(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	rt := l.rt
	every := max(rt.opts.CallLeaseTTL/3, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		ok, err := rt.store.RenewCallLease(ctx, l.sid, l.stream, rt.opts.CallLeaseTTL)
		cancel()
		switch {
		case err != nil && l.ending.Load():
			return
		case err != nil:
			rt.log.Warn("renewing a call stream's lease failed", "error", err)
		case !ok && l.ending.Load():
			return // End dropped the lease under this renewal: the call answered
		case !ok:
			rt.log.Warn("a call stream's lease lapsed while the call ran; resumes end with an error")
			return
		}
	}
}

// CallEventsAfter returns the logged events of call stream `stream` after
// log id `after`, oldest first. When the call's instance is gone (its
// lease lapsed) and no answer was logged, the last event returned is an
// error answer for the call's request id, under the id `after` (nothing
// new was logged), so the stream ends like an answered one.
//
// ErrUnknownCallStream for a stream the log holds nothing of;
// store.ErrBadEventID for an id the log never issued.
func (rt *Runtime) CallEventsAfter(ctx context.Context, sid store.SessionID, stream store.CallStreamID, after store.EventID) ([]store.Event, error) {
	cs, evs, err := rt.store.CallStreamEventsAfter(ctx, sid, stream, after, rt.opts.EventLogSize)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnknownCallStream
	}
	if err != nil {
		return nil, err
	}
	if cs.Lost() {
		last := after
		if n := len(evs); n > 0 {
			last = evs[n-1].ID
		}
		evs = append(evs, store.Event{ID: last, Stream: stream, Data: lostCallAnswer(cs.RequestID)})
	}
	return evs, nil
}

// lostCallAnswer is the error answer of a call whose instance stopped
// before it answered. An id trimmed from the log is answered as null.
func lostCallAnswer(reqID json.RawMessage) []byte {
	if len(reqID) == 0 {
		reqID = json.RawMessage("null")
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": reqID, "error": map[string]any{
		"code":    router.CodeInternalError,
		"message": "the gateway instance running this call stopped before it answered; the call's outcome is unknown",
	}}
	b, _ := json.Marshal(msg)
	return b
}
