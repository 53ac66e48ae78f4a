package router

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A session's GET stream carries what no request asked for: resource
// updates, log messages, list-changed notifications. The instance that
// holds the client's GET stream claims it in the store, keeps one listening
// connection per backend, and appends every notification to the session's
// event log before sending it, so a client that reconnects with
// Last-Event-ID, to any instance, gets what it missed, once, in order.
//
// When the client drops the stream, its listeners linger (StreamLinger) so
// events keep reaching the log until the client is back. A GET on another
// instance takes the claim over and tells the old holder to stop, but only
// once its own listeners are up (make before break), so no notification
// falls between the two holders.
//
// The log, not the listener, is what a client is sent: the holder streams
// every event after the last one it sent, so events another instance logs
// (the old holder, until it stops) reach the client in log order too. Near
// a takeover both holders may log the same backend notification: delivery
// is at least once, never lossy.

// ErrStreamBusy is returned for a second GET stream of a session on an
// instance that already serves one.
var ErrStreamBusy = errors.New("the session already has an open stream on this instance")

const (
	claimTTL     = 60 * time.Second
	claimRefresh = 20 * time.Second
	liveBuffer   = 256
	// takeoverWait bounds how long a new holder waits for its listeners
	// before telling the old holder to stop.
	takeoverWait = 5 * time.Second
	// emitTimeout bounds logging and announcing one notification.
	emitTimeout = 5 * time.Second
)

// SessionEvents is one attached GET stream.
type SessionEvents struct {
	// PrimeID is the event id to prime the client with: resuming from it
	// replays exactly what this stream will have missed.
	PrimeID string
	// Replay holds the logged events after the client's Last-Event-ID.
	Replay []store.Event
	// Live carries new events; it is closed if the client falls so far
	// behind that events were dropped (it should reconnect and resume).
	Live <-chan store.Event
	// Ended is closed when the stream must end: another instance took it
	// over, the session ended, or the gateway is shutting down.
	Ended <-chan struct{}

	ss   *sessionStream
	live chan store.Event
}

// Close detaches the client; the listeners linger for StreamLinger.
func (e *SessionEvents) Close() { e.ss.detach(e.live) }

type streamHub struct {
	r        *Router
	mu       sync.Mutex
	sessions map[string]*sessionStream
}

func newStreamHub(r *Router) *streamHub {
	return &streamHub{r: r, sessions: map[string]*sessionStream{}}
}

// sessionStream is this instance's hold on one session's GET stream.
type sessionStream struct {
	hub   *streamHub
	sid   string
	vhost string
	hdr   http.Header

	ctx    context.Context // the hold's lifetime: listeners and refresher
	cancel context.CancelFunc
	ended  chan struct{}
	wg     sync.WaitGroup

	restartMu sync.Mutex // serializes restartListeners

	mu        sync.Mutex // orders append+deliver; guards the fields below
	owner     string     // "<instance>/<nonce>", as last claimed in the store
	live      chan store.Event
	sent      string          // id of the newest event the attached client has
	ready     <-chan struct{} // closed once the current listeners are up
	linger    *time.Timer
	listeners *listenerSet
	finished  bool
}

// OpenStream attaches the client's GET stream on this instance.
func (r *Router) OpenStream(ctx context.Context, sess *store.Session, hdr http.Header, lastEventID string) (*SessionEvents, error) {
	h := r.streams
	h.mu.Lock()
	ss := h.sessions[sess.ID]
	if ss != nil {
		ss.mu.Lock()
		switch {
		case ss.finished: // on its way out: start afresh
			ss.mu.Unlock()
			ss = nil
		case ss.live != nil:
			ss.mu.Unlock()
			h.mu.Unlock()
			return nil, ErrStreamBusy
		}
	}
	created := ss == nil
	if created {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ss = &sessionStream{hub: h, sid: sess.ID, vhost: sess.VHost, hdr: hdr.Clone(),
			ctx: sctx, cancel: cancel, ended: make(chan struct{})}
		h.sessions[sess.ID] = ss
		ss.mu.Lock()
	}
	h.mu.Unlock()
	// Attach, take a fresh owner id and read the log under ss.mu: an event
	// logged meanwhile waits for the lock and is then sent after what the
	// log read returned; a late "taken" message for the old id is ignored.
	live := make(chan store.Event, liveBuffer)
	ss.live = live
	if ss.linger != nil {
		ss.linger.Stop()
		ss.linger = nil
	}
	oldOwner := ss.owner
	ss.owner = r.opts.Store.InstanceID() + "/" + newRandomID("")
	ev := &SessionEvents{Live: live, Ended: ss.ended, ss: ss, live: live}
	err := ev.position(ctx, r, sess.ID, lastEventID)
	if err == nil {
		ss.sent = ev.PrimeID
	}
	ss.mu.Unlock()
	if err == nil {
		err = ss.claim(ctx, created, oldOwner)
	}
	if err != nil {
		if created {
			ss.finish(true)
		} else {
			ss.detach(live)
		}
		return nil, err
	}
	return ev, nil
}

// position fills in where the client resumes: the logged events after
// lastEventID, or the log's end for a fresh stream.
func (ev *SessionEvents) position(ctx context.Context, r *Router, sid, lastEventID string) error {
	if lastEventID == "" {
		id, err := r.opts.Store.LatestEventID(ctx, sid)
		ev.PrimeID = id
		return err
	}
	replay, err := r.opts.Store.EventsAfter(ctx, sid, lastEventID, r.opts.EventLogSize)
	if err != nil {
		return err
	}
	if len(replay) == 0 {
		// Nothing follows it: it is the newest event, or one the log never
		// issued (from the future), which would hide every later event.
		newest, err := r.opts.Store.LatestEventID(ctx, sid)
		if err != nil {
			return err
		}
		if err := store.CheckResumeID(lastEventID, newest); err != nil {
			return err
		}
	}
	ev.PrimeID = lastEventID
	if n := len(replay); n > 0 {
		ev.PrimeID = replay[n-1].ID
	}
	// Calls' streamed answers share the log; they are not this stream's.
	ev.Replay = slices.DeleteFunc(replay, func(e store.Event) bool { return e.Stream != "" })
	return nil
}

// emit logs a notification and sends the attached client what it has not
// had yet. Without an attached client the other instances are told, in
// case one of them streams the session now.
func (ss *sessionStream) emit(n *jsonrpc.Request) {
	data, err := jsonrpc.EncodeMessage(n)
	if err != nil {
		return
	}
	r := ss.hub.r
	// A notification received is logged and announced even if the hold
	// has ended meanwhile (a takeover finishes it, cancelling ss.ctx, while
	// its listeners still deliver what they got): the new holder's
	// listeners may have come up just after the backend sent it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ss.ctx), emitTimeout)
	defer cancel()
	ss.mu.Lock()
	id, err := r.opts.Store.AppendEvent(ctx, ss.sid, data, r.opts.EventLogSize, r.opts.SessionTTL)
	switch {
	case errors.Is(err, store.ErrNotFound):
		ss.mu.Unlock()
		go ss.finish(true) // the session is gone
		return
	case err != nil:
		ss.mu.Unlock()
		r.log.Warn("event log append failed", "error", err)
		return
	case ss.live != nil:
		ss.sendLocked()
		ss.mu.Unlock()
		return
	}
	ss.mu.Unlock()
	// Lingering, or taken over: whoever streams the session catches up.
	if err := r.opts.Store.Publish(ctx, store.BusMessage{Kind: store.BusNotify, Session: ss.sid, ID: id}); err != nil {
		r.log.Warn("publishing a logged event failed", "error", err)
	}
}

// catchUp sends the attached client what others logged since.
func (ss *sessionStream) catchUp() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live != nil && !ss.finished {
		ss.sendLocked()
	}
}

// sendLocked sends the attached client the logged events after ss.sent.
func (ss *sessionStream) sendLocked() {
	r := ss.hub.r
	evs, err := r.opts.Store.EventsAfter(ss.ctx, ss.sid, ss.sent, r.opts.EventLogSize)
	if err != nil {
		if ss.ctx.Err() == nil {
			r.log.Warn("event log read failed", "error", err)
		}
		return
	}
	for _, e := range evs {
		if e.Stream != "" {
			ss.sent = e.ID // a call's streamed answer, not this stream's
			continue
		}
		select {
		case ss.live <- e:
			ss.sent = e.ID
		default:
			// The client is too slow: end its stream; it resumes from the log.
			close(ss.live)
			ss.live = nil
			ss.lingerLocked()
			return
		}
	}
}

func (h *streamHub) get(sid string) *sessionStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sid]
}

// onBus reacts to other instances: a takeover ends our hold; changed
// subscriptions or log level restart our listeners.
func (h *streamHub) onBus(m store.BusMessage) {
	ss := h.get(m.Session)
	if ss == nil {
		return
	}
	switch m.Kind {
	case store.BusStreamTaken:
		go ss.finishIf(false, ss.ownedBy(m.ID))
	case store.BusSubscriptions:
		go ss.restartListeners()
	case store.BusNotify:
		go ss.catchUp()
	case store.BusSessionEnded:
		go ss.finish(false) // the claim went with the session's keys
	}
}

// vhostChanged emits list_changed on every stream of a vhost whose config
// changed, and restarts their listeners on the new backend set.
func (h *streamHub) vhostChanged(vhosts map[string]bool) {
	h.mu.Lock()
	var affected []*sessionStream
	for _, ss := range h.sessions {
		if vhosts[ss.vhost] {
			affected = append(affected, ss)
		}
	}
	h.mu.Unlock()
	for _, ss := range affected {
		for _, m := range []string{"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"} {
			ss.emit(&jsonrpc.Request{Method: m})
		}
		go ss.restartListeners()
	}
}

func (h *streamHub) closeAll() {
	h.mu.Lock()
	all := make([]*sessionStream, 0, len(h.sessions))
	for _, ss := range h.sessions {
		all = append(all, ss)
	}
	h.mu.Unlock()
	for _, ss := range all {
		ss.finish(true)
	}
}

// listenersChanged tells the instance holding the session's stream to
// restart its backend listeners (subscriptions or log level changed).
func (r *Router) listenersChanged(ctx context.Context, sid string) {
	if err := r.opts.Store.Publish(ctx, store.BusMessage{Kind: store.BusSubscriptions, Session: sid}); err != nil {
		r.log.Warn("publishing listener change failed", "error", err)
	}
}
