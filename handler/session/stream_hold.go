package session

import (
	"context"
	"time"

	"github.com/mcpgw/gateway/store"
)

// The lifecycle of this instance's hold on a session's GET stream: the
// claim in the store (and the takeover of another instance's), the
// linger after the client leaves, and the end of the hold. A reason to end
// a hold is often seen outside the hold's lock (a takeover message, a lost
// claim, a linger timer) and may be overtaken by a client reattaching, so
// every one is re-checked under it (finishIf).

// claim makes this instance the session's stream holder (starting the
// hold's run loop and listeners if the hold is new) and, once the
// listeners are up and the previous holder's have drained, tells the
// previous holder to stop. Every attach claims
// under a fresh owner id (old is the one before): a lingering hold that
// another instance took over meanwhile takes the stream back, and the
// other's late "taken" message for the old id cannot end it.
func (ss *sessionStream) claim(ctx context.Context, created bool, old string) error {
	st := ss.hub.rt.store
	owner := ss.ownerID()
	prev, err := st.ClaimStream(ctx, ss.sid, owner, claimTTL)
	if err != nil {
		return err
	}
	var ready <-chan struct{}
	if created {
		ss.spawn(ss.run)
		ready = ss.requestRestart()
	} else {
		ss.mu.Lock()
		ready = ss.ready
		ss.mu.Unlock()
	}
	inst := ownerPrefix(prev)
	if prev == "" || prev == old || inst == st.InstanceID() {
		return nil
	}
	ss.spawn(func() {
		t := time.NewTimer(takeoverWait)
		defer t.Stop()
		select {
		case <-ready:
			// The previous holder's listeners drain what the backends
			// addressed to them before ours subscribed (listenerDrain).
			t.Reset(listenerDrain)
			select {
			case <-t.C:
			case <-ss.ctx.Done():
				return
			}
		case <-t.C:
		case <-ss.ctx.Done():
			return
		}
		_ = st.Publish(ss.ctx, store.BusMessage{Kind: store.BusStreamTaken, Session: ss.sid, ID: prev, To: inst})
	})
	return nil
}

// detach is called when the client's GET ends; listeners linger.
func (ss *sessionStream) detach(live chan store.Event) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live != live || ss.finished {
		return
	}
	ss.live = nil
	ss.lingerLocked()
}

// lingerLocked schedules the end of a detached hold. The timer may fire
// just as a client reattaches: finishing then needs the hold still detached.
func (ss *sessionStream) lingerLocked() {
	ss.linger = time.AfterFunc(ss.hub.rt.opts.StreamLinger, func() {
		ss.hub.spawn(func() { ss.finishIf(true, func() bool { return ss.live == nil }) })
	})
}

// ownedBy is a finishIf condition: the hold is still claimed as owner.
func (ss *sessionStream) ownedBy(owner string) func() bool {
	return func() bool { return ss.owner == owner }
}

// finish ends the hold: listeners stop, the GET (if any) ends, and the
// claim is released unless another instance has taken it. It waits for
// the hold's goroutines, so none of them may call it (they spawn it on
// the hub instead).
func (ss *sessionStream) finish(release bool) { ss.finishIf(release, nil) }

// finishIf finishes the hold if cond, checked under ss.mu, holds (nil:
// always).
func (ss *sessionStream) finishIf(release bool, cond func() bool) {
	ss.mu.Lock()
	if ss.finished || (cond != nil && !cond()) {
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
		_ = h.rt.store.ReleaseStream(ctx, ss.sid, ss.ownerID())
	}
}

// spawn runs fn on a goroutine that finish waits for, unless the hold has
// already finished; it reports whether it did.
func (ss *sessionStream) spawn(fn func()) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.finished {
		return false
	}
	ss.wg.Go(fn)
	return true
}

func (ss *sessionStream) ownerID() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.owner
}
