package session

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A session's GET stream carries what no request asked for: resource
// updates, log messages, list-changed notifications. The instance that
// holds the client's GET stream claims it in the store, keeps one listening
// connection per backend, and appends every notification to the session's
// event log before the client is sent it, so a client that reconnects with
// Last-Event-ID, to any instance, gets what it missed, once, in order.
//
// When the client drops the stream, its listeners linger (StreamLinger) so
// events keep reaching the log until the client is back. A GET on another
// instance takes the claim over and tells the old holder to stop, but only
// once its own listeners are up (make before break), so no notification
// falls between the two holders.
//
// The log, not the listener, is what a client is sent: the hold's run loop
// sends every event after the last one it sent, so events another instance
// logs (the old holder, until it stops) reach the client in log order too.
// Near a takeover both holders may log the same backend notification:
// delivery is at least once, never lossy.
//
// No lock is held across store I/O: listeners append to the log on their
// own goroutines and poke the run loop, the one goroutine that reads the
// log for the client, renews the claim and rebuilds listeners (hold_loop.go),
// so a slow store delays the stream but never stalls a listener's read
// loop behind another's write.

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
	PrimeID store.EventID
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

// streamHub is this instance's set of holds, and the owner of the
// goroutines started on behalf of the bus (which must not block).
type streamHub struct {
	rt       *Runtime
	mu       sync.Mutex
	sessions map[store.SessionID]*sessionStream
	closed   bool           // no goroutine is spawned after Close
	wg       sync.WaitGroup // goroutines started by spawn
}

func newStreamHub(rt *Runtime) *streamHub {
	return &streamHub{rt: rt, sessions: map[store.SessionID]*sessionStream{}}
}

// spawn runs fn on a goroutine the runtime's Close waits for.
func (h *streamHub) spawn(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.wg.Go(fn)
}

// wait stops spawning and waits for every spawned goroutine.
func (h *streamHub) wait() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

// sessionStream is this instance's hold on one session's GET stream.
type sessionStream struct {
	hub   *streamHub
	sid   store.SessionID
	vhost string
	hdr   http.Header

	ctx    context.Context // the hold's lifetime: listeners and run loop
	cancel context.CancelFunc
	ended  chan struct{}
	wg     sync.WaitGroup // the hold's goroutines (see spawn)

	poke    chan struct{}      // capacity 1: the log may hold news for the client
	restart chan chan struct{} // listener rebuilds, served by the run loop

	// listeners is the current generation and draining the one it
	// replaced, if still listening; only the run loop touches them.
	listeners *listenerSet
	draining  *listenerSet
	// subscribed are the session's subscriptions as the current
	// generation was built with them (published URIs): while a rebuild
	// overlaps the old generation with the new (make-before-break), an
	// update of a resource the session has since unsubscribed from, which
	// only the old generation still hears, is not delivered.
	subscribed atomic.Pointer[map[string]bool]

	mu       sync.Mutex // guards the fields below; never held across I/O
	owner    string     // "<instance>/<nonce>", as last claimed in the store
	live     chan store.Event
	sent     store.EventID   // id of the newest event the attached client has; "" while positioning
	ready    <-chan struct{} // closed once the latest requested listeners are up
	drained  <-chan struct{} // closed once the generation the latest rebuild replaced has stopped
	linger   *time.Timer
	finished bool
	// caller is who the attached GET came from (router/credentials): the
	// listeners open their backend connections as that caller (claims for
	// access rules and templates, the token to exchange); a client that
	// re-attaches with another token gets them rebuilt as the new caller.
	caller *credentials.Caller
}

// OpenStream attaches the client's GET stream on this instance.
func (rt *Runtime) OpenStream(ctx context.Context, sess *store.Session, hdr http.Header, lastEventID store.EventID) (*SessionEvents, error) {
	h := rt.streams
	live := make(chan store.Event, liveBuffer)
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
			ctx: sctx, cancel: cancel, ended: make(chan struct{}),
			poke: make(chan struct{}, 1), restart: make(chan chan struct{}, 8)}
		h.sessions[sess.ID] = ss
		ss.mu.Lock()
	}
	h.mu.Unlock()
	// Attach now (a second GET is busy from here on) with a fresh owner id,
	// so a late "taken" message for the old one is ignored; nothing is sent
	// until the stream's position is known (sent is "").
	ss.live, ss.sent = live, ""
	if ss.linger != nil {
		ss.linger.Stop()
		ss.linger = nil
	}
	oldOwner := ss.owner
	ss.owner = rt.store.InstanceID() + "/" + store.RandomID("")
	recaller := false
	if c, ok := credentials.CallerFrom(ctx); ok {
		recaller = !created && !sameCaller(ss.caller, c)
		ss.caller = &c
	}
	ss.mu.Unlock()

	ev := &SessionEvents{Live: live, Ended: ss.ended, ss: ss, live: live}
	err := ev.position(ctx, rt, sess.ID, lastEventID)
	if err == nil {
		// Whatever was logged since the position was read is after PrimeID:
		// the run loop sends it once poked.
		ss.mu.Lock()
		if ss.live == live {
			ss.sent = ev.PrimeID
		}
		ss.mu.Unlock()
		ss.notify()
		err = ss.claim(ctx, created, oldOwner)
	}
	if err == nil && recaller {
		ss.spawn(func() { ss.requestRestart() })
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

// sameCaller reports whether c is the caller old was (nil: none known).
func sameCaller(old *credentials.Caller, c credentials.Caller) bool {
	return old != nil && old.Principal == c.Principal && old.Token == c.Token && reflect.DeepEqual(old.Claims, c.Claims)
}

// position fills in where the client resumes: the logged events after
// lastEventID, or the log's end for a fresh stream.
func (ev *SessionEvents) position(ctx context.Context, rt *Runtime, sid store.SessionID, lastEventID store.EventID) error {
	if lastEventID == "" {
		id, err := rt.store.LatestEventID(ctx, sid)
		ev.PrimeID = id
		return err
	}
	replay, err := rt.store.EventsAfter(ctx, sid, lastEventID, rt.opts.EventLogSize)
	if err != nil {
		return err
	}
	if len(replay) == 0 {
		// Nothing follows it: it is the newest event, or one the log never
		// issued (from the future), which would hide every later event.
		newest, err := rt.store.LatestEventID(ctx, sid)
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

// emit logs a notification (on the caller's goroutine: a listener's) and
// has the attached client sent what it has not had yet. Without an
// attached client the other instances are told, in case one of them
// streams the session now.
func (ss *sessionStream) emit(n *jsonrpc.Request) {
	if wire.NotificationOf(n.Method).ResourceUpdate && !ss.stillSubscribed(n) {
		return
	}
	data, err := jsonrpc.EncodeMessage(n)
	if err != nil {
		return
	}
	rt := ss.hub.rt
	// A notification received is logged and announced even if the hold
	// has ended meanwhile (a takeover finishes it, cancelling ss.ctx, while
	// its listeners still deliver what they got): the new holder's
	// listeners may have come up just after the backend sent it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ss.ctx), emitTimeout)
	defer cancel()
	id, err := rt.store.AppendEvent(ctx, ss.sid, data, rt.opts.EventLogSize, rt.opts.SessionTTL)
	switch {
	case errors.Is(err, store.ErrNotFound):
		ss.hub.spawn(func() { ss.finish(true) }) // the session is gone
		return
	case err != nil:
		rt.log.Warn("event log append failed", "error", err)
		return
	}
	ss.mu.Lock()
	attached := ss.live != nil && !ss.finished
	ss.mu.Unlock()
	if attached {
		ss.notify()
		return
	}
	// Lingering, or taken over: whoever streams the session catches up.
	if err := rt.store.Publish(ctx, store.BusMessage{Kind: store.BusNotify, Session: ss.sid, ID: string(id)}); err != nil {
		rt.log.Warn("publishing a logged event failed", "error", err)
	}
}

// notify tells the run loop the log may hold news for the client. It
// never blocks: one pending poke covers any number of events.
func (ss *sessionStream) notify() {
	select {
	case ss.poke <- struct{}{}:
	default:
	}
}

// sendNew sends the attached client the logged events after the last one
// it was sent. Run loop only: it is the one reader of the log for the
// client, so the read needs no lock; what it read is sent only if the
// client it read for is still attached at the same position.
func (ss *sessionStream) sendNew() {
	ss.mu.Lock()
	live, sent, finished := ss.live, ss.sent, ss.finished
	ss.mu.Unlock()
	if live == nil || sent == "" || finished {
		return
	}
	rt := ss.hub.rt
	evs, err := rt.store.EventsAfter(ss.ctx, ss.sid, sent, rt.opts.EventLogSize)
	if err != nil {
		if ss.ctx.Err() == nil {
			rt.log.Warn("event log read failed", "error", err)
		}
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live != live || ss.sent != sent || ss.finished {
		return // reattached meanwhile: OpenStream poked again
	}
	for _, e := range evs {
		if e.Stream != "" {
			ss.sent = e.ID // a call's streamed answer, not this stream's
			continue
		}
		select {
		case live <- e:
			ss.sent = e.ID
		default:
			// The client is too slow: end its stream; it resumes from the log.
			close(live)
			ss.live = nil
			ss.lingerLocked()
			return
		}
	}
}

func (h *streamHub) get(sid store.SessionID) *sessionStream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sid]
}

// onBus reacts to other instances: a takeover ends our hold; changed
// subscriptions or log level rebuild our listeners; an event logged
// elsewhere is sent. It runs on the bus goroutine and must not block.
func (h *streamHub) onBus(m store.BusMessage) {
	ss := h.get(m.Session)
	if ss == nil {
		return
	}
	switch m.Kind {
	case store.BusStreamTaken:
		h.spawn(func() { ss.finishIf(false, ss.ownedBy(m.ID)) })
	case store.BusSubscriptions:
		h.spawn(func() { ss.requestRestart() })
	case store.BusNotify:
		ss.notify()
	case store.BusSessionEnded:
		h.spawn(func() { ss.finish(false) }) // the claim went with the session's keys
	}
}

// vhostChanged emits list_changed on every stream of a vhost whose config
// changed, and rebuilds their listeners on the new backend set.
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
		for _, m := range wire.ListChanges {
			ss.emit(&jsonrpc.Request{Method: m})
		}
		ss.requestRestart()
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

// stillSubscribed reports whether a resource update is about a resource
// the session is subscribed to as its listeners were last built.
func (ss *sessionStream) stillSubscribed(n *jsonrpc.Request) bool {
	subs := ss.subscribed.Load()
	if subs == nil {
		return true // no generation built yet: nothing to judge by
	}
	var p struct {
		URI string `json:"uri"`
	}
	return json.Unmarshal(n.Params, &p) == nil && (*subs)[p.URI]
}
