package router

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
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
// instance takes the claim over and tells the old holder to stop.

// ErrStreamBusy is returned for a second GET stream of a session on an
// instance that already serves one.
var ErrStreamBusy = errors.New("the session already has an open stream on this instance")

const (
	claimTTL     = 60 * time.Second
	claimRefresh = 20 * time.Second
	liveBuffer   = 256
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
	owner string // "<instance>/<nonce>", as claimed in the store
	hdr   http.Header

	ctx    context.Context // the hold's lifetime: listeners and refresher
	cancel context.CancelFunc
	ended  chan struct{}
	wg     sync.WaitGroup

	mu        sync.Mutex // orders append+deliver; guards the fields below
	live      chan store.Event
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
		busy := ss.live != nil
		ss.mu.Unlock()
		if busy {
			h.mu.Unlock()
			return nil, ErrStreamBusy
		}
	}
	created := ss == nil
	if created {
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		ss = &sessionStream{hub: h, sid: sess.ID, vhost: sess.VHost, hdr: hdr.Clone(),
			owner: r.opts.Store.InstanceID() + "/" + newRandomID(""),
			ctx:   sctx, cancel: cancel, ended: make(chan struct{})}
		h.sessions[sess.ID] = ss
	}
	// Attach before reading the log: an event appended in between is then
	// both replayed and live, and the writer drops the duplicate by id.
	live := make(chan store.Event, liveBuffer)
	ss.mu.Lock()
	ss.live = live
	if ss.linger != nil {
		ss.linger.Stop()
		ss.linger = nil
	}
	ss.mu.Unlock()
	h.mu.Unlock()

	fail := func(err error) (*SessionEvents, error) {
		if created {
			ss.finish(true)
		} else {
			ss.detach(live)
		}
		return nil, err
	}
	ev := &SessionEvents{Live: live, Ended: ss.ended, ss: ss, live: live}
	if lastEventID != "" {
		replay, err := r.opts.Store.EventsAfter(ctx, sess.ID, lastEventID, r.opts.EventLogSize)
		if err != nil {
			return fail(err)
		}
		ev.Replay = replay
		ev.PrimeID = lastEventID
		if n := len(replay); n > 0 {
			ev.PrimeID = replay[n-1].ID
		}
	} else {
		id, err := r.opts.Store.LatestEventID(ctx, sess.ID)
		if err != nil {
			return fail(err)
		}
		ev.PrimeID = id
	}
	if created {
		prev, err := r.opts.Store.ClaimStream(ctx, sess.ID, ss.owner, claimTTL)
		if err != nil {
			return fail(err)
		}
		if inst, _, _ := strings.Cut(prev, "/"); prev != "" && inst != r.opts.Store.InstanceID() {
			_ = r.opts.Store.Publish(ctx, store.BusMessage{Kind: store.BusStreamTaken, Session: sess.ID, ID: prev, To: inst})
		}
		ss.wg.Add(1)
		go ss.refresh()
		ss.restartListeners()
	}
	return ev, nil
}

// detach is called when the client's GET ends; listeners linger.
func (ss *sessionStream) detach(live chan store.Event) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live != live || ss.finished {
		return
	}
	ss.live = nil
	ss.linger = time.AfterFunc(ss.hub.r.opts.StreamLinger, func() { ss.finish(true) })
}

// finish ends the hold: listeners stop, the GET (if any) ends, and the
// claim is released unless another instance has taken it.
func (ss *sessionStream) finish(release bool) {
	ss.mu.Lock()
	if ss.finished {
		ss.mu.Unlock()
		return
	}
	ss.finished = true
	if ss.linger != nil {
		ss.linger.Stop()
	}
	ss.live = nil
	ss.mu.Unlock()

	h := ss.hub
	h.mu.Lock()
	if h.sessions[ss.sid] == ss {
		delete(h.sessions, ss.sid)
	}
	h.mu.Unlock()
	close(ss.ended)
	ss.cancel()
	ss.wg.Wait()
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = h.r.opts.Store.ReleaseStream(ctx, ss.sid, ss.owner)
	}
}

// refresh keeps the claim alive; losing it means another instance took
// the stream over.
func (ss *sessionStream) refresh() {
	defer ss.wg.Done()
	t := time.NewTicker(claimRefresh)
	defer t.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case <-t.C:
			held, err := ss.hub.r.opts.Store.RefreshStream(ss.ctx, ss.sid, ss.owner, claimTTL)
			if err == nil && !held {
				go ss.finish(false)
				return
			}
		}
	}
}

// emit logs a notification and sends it to the attached client.
func (ss *sessionStream) emit(n *jsonrpc.Request) {
	data, err := jsonrpc.EncodeMessage(n)
	if err != nil {
		return
	}
	r := ss.hub.r
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.finished {
		return
	}
	id, err := r.opts.Store.AppendEvent(ss.ctx, ss.sid, data, r.opts.EventLogSize, r.opts.SessionTTL)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			go ss.finish(true) // the session is gone
		} else {
			r.log.Warn("event log append failed", "error", err)
		}
		return
	}
	if ss.live == nil {
		return // lingering: the log keeps it for the client's return
	}
	select {
	case ss.live <- store.Event{ID: id, Data: data}:
	default:
		// The client is too slow: end its stream; it resumes from the log.
		close(ss.live)
		ss.live = nil
		ss.linger = time.AfterFunc(r.opts.StreamLinger, func() { ss.finish(true) })
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
		if m.ID == ss.owner {
			go ss.finish(false)
		}
	case store.BusSubscriptions:
		go ss.restartListeners()
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

// EventIDAfter reports whether event id a comes after b in log order.
func EventIDAfter(a, b string) bool {
	am, as := splitEventID(a)
	bm, bs := splitEventID(b)
	return am > bm || (am == bm && as > bs)
}

func splitEventID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}
