package session

import (
	"time"
)

// The run loop is the one goroutine of a hold that does store I/O on the
// hold's behalf: it reads the log for the attached client (sendNew),
// renews the claim, and rebuilds the listeners, one thing at a time, so
// none of that needs a lock held across I/O.

// run serves the hold until it ends, then stops the last listeners.
func (ss *sessionStream) run() {
	t := time.NewTicker(claimRefresh)
	defer t.Stop()
	defer func() {
		if ss.listeners != nil {
			ss.listeners.stop()
		}
	}()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case <-ss.poke:
			ss.sendNew()
		case first := <-ss.restart:
			// Requests that queued meanwhile are served by the same rebuild.
			waiting := []chan struct{}{first}
			for more := true; more; {
				select {
				case r := <-ss.restart:
					waiting = append(waiting, r)
				default:
					more = false
				}
			}
			up := ss.restartListeners()
			released := func() {
				for _, r := range waiting {
					close(r)
				}
			}
			if !ss.spawn(func() {
				select {
				case <-up:
				case <-ss.ctx.Done():
				}
				released()
			}) {
				released()
			}
		case <-t.C:
			ss.refresh()
			// An event another instance logged whose announcement was lost
			// (pub/sub is at most once) is sent now at the latest.
			ss.sendNew()
		}
	}
}

// requestRestart asks the run loop to rebuild the listeners from the
// session's current state in the store. The returned channel is closed
// once every new listener is receiving (or has failed its first try), or
// the hold has ended: from then on nothing the backends send is missed.
func (ss *sessionStream) requestRestart() <-chan struct{} {
	ready := make(chan struct{})
	ss.mu.Lock()
	ss.ready = ready
	ss.mu.Unlock()
	select {
	case ss.restart <- ready:
	case <-ss.ctx.Done():
		close(ready)
	}
	return ready
}

// refresh keeps the claim alive; losing it means another instance took
// the stream over.
func (ss *sessionStream) refresh() {
	owner := ss.ownerID()
	held, err := ss.hub.rt.store.RefreshStream(ss.ctx, ss.sid, owner, claimTTL)
	if err == nil && !held {
		ss.hub.spawn(func() { ss.finishIf(false, ss.ownedBy(owner)) })
	}
}
