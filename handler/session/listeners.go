package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/store"
)

// The instance holding a session's GET stream keeps one listening
// connection per backend that can tell it something: resource updates for
// the session's subscriptions, list changes, log messages. Which backends,
// and what each connection replays and renames, is the federation core's
// (router.ListenTargets, router.ListenBackend); this file keeps them
// running, reconnecting with backoff, one generation at a time.

// listenerSet is one generation of a session's listeners; it is replaced
// whole when subscriptions, log level or config change.
type listenerSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// retire is closed when the set, replaced and draining, is to stop
	// before its drain time is up (see restartListeners).
	retire     chan struct{}
	retireOnce sync.Once
}

func (l *listenerSet) stop() {
	l.cancel()
	l.wg.Wait()
}

func (l *listenerSet) retireNow() { l.retireOnce.Do(func() { close(l.retire) }) }

// listenerDrain is how long a replaced generation keeps listening after
// its successor is up. A backend picks who to tell about a change when the
// change happens and writes to them later: an update it addressed to the
// old generation's session just before the new one subscribed arrives
// after the new one is up (seen at 10 ms on a loaded machine). The backend
// gives no signal that such writes are done, so the old set drains for a
// while; an update heard by both is logged twice, which a client of a
// resource-updated hint cannot tell from two updates.
const listenerDrain = 2 * time.Second

// restartListeners replaces the session's listeners with a set built from
// the session's current state in the store. Run loop only. The channel it
// returns is closed once every new listener is receiving (or has failed its
// first try).
//
// The replacement is make-before-break, like a takeover between instances:
// the old set keeps listening until the new one is up and for
// listenerDrain after, so a resource update the backend sends meanwhile
// reaches the session (maybe twice: a notification may arrive on both
// sets, and both log it). Stopping the old set first lost every update of
// the gap, which a subscription change, a log level or a reload opens.
// At most one replaced set drains: the next rebuild retires it at once, so
// a client changing its subscriptions quickly holds at most three sets
// (draining, current, being built).
func (ss *sessionStream) restartListeners() <-chan struct{} {
	rt := ss.hub.rt
	up := make(chan struct{})
	old := ss.listeners
	ss.listeners = nil
	if ss.draining != nil {
		ss.draining.retireNow()
	}
	ss.draining = old
	drained := make(chan struct{})
	ss.mu.Lock()
	ss.drained = drained
	ss.mu.Unlock()
	stopOld := sync.OnceFunc(func() {
		if old != nil {
			old.stop()
		}
		close(drained)
	})
	sess, err := rt.store.LoadSession(ss.ctx, ss.sid, rt.opts.SessionTTL)
	if err != nil {
		ss.draining = nil
		stopOld()
		if errors.Is(err, store.ErrNotFound) {
			ss.hub.spawn(func() { ss.finish(true) })
		}
		close(up)
		return up
	}
	subs := make(map[string]bool, len(sess.Subscriptions))
	for _, uri := range sess.Subscriptions {
		subs[uri] = true
	}
	ss.subscribed.Store(&subs)
	targets, ok := rt.backends.ListenTargets(sess)
	if !ok {
		ss.draining = nil
		stopOld()
		close(up)
		return up
	}
	base := ss.ctx
	ss.mu.Lock()
	if c := ss.caller; c != nil {
		base = credentials.WithCaller(base, *c) // the attached GET's caller
	}
	ss.mu.Unlock()
	lctx, cancel := context.WithCancel(base)
	set := &listenerSet{cancel: cancel, retire: make(chan struct{})}
	var pending sync.WaitGroup
	for _, t := range targets {
		pending.Add(1)
		set.wg.Go(func() { ss.listen(lctx, sess, t, sync.OnceFunc(pending.Done)) })
	}
	set.wg.Go(func() {
		pending.Wait()
		close(up)
	})
	ss.listeners = set
	if old == nil {
		stopOld()
	} else if !ss.spawn(func() {
		select {
		case <-up:
		case <-ss.ctx.Done():
		}
		drain := time.NewTimer(listenerDrain)
		defer drain.Stop()
		select {
		case <-drain.C:
		case <-old.retire:
		case <-ss.ctx.Done():
		}
		stopOld()
	}) {
		stopOld() // the hold has finished: nothing to overlap with
	}
	return up
}

// listen keeps one backend listener running, reconnecting with backoff,
// until ctx ends or the backend says it offers no stream. It calls up once
// the first connection is receiving, or when the first try fails.
func (ss *sessionStream) listen(ctx context.Context, sess *store.Session, t router.ListenTarget, up func()) {
	defer up()
	rt := ss.hub.rt
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		err := rt.backends.ListenBackend(ctx, sess, ss.hdr, t, ss.emit, up)
		up()
		if errors.Is(err, router.ErrNoStream) || ctx.Err() != nil {
			return
		}
		rt.log.Debug("backend listener ended; reconnecting", "backend", t.Key, "error", err, "in", backoff)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}
