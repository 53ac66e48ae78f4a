package testsupport

import (
	"errors"
	"testing"
	"time"
)

// Eventually checks cond until it holds or timeout passes, and reports
// whether it held. It is the test support's one polling loop: use it only
// where no signal exists to wait on, e.g. for state another process writes
// to Redis on its own schedule, or for a server that gives no sign it is
// listening but accepting. (Backend.WaitCount waits on a signal instead.)
func Eventually(t testing.TB, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	return poll(timeout, nil, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}

// errNotYet is Eventually's check failing: cond does not hold yet.
var errNotYet = errors.New("condition not met")

// Poll intervals: the first retry comes soon, later ones back off so a
// long wait does not hammer what it polls.
const (
	pollFirst = 5 * time.Millisecond
	pollMax   = 50 * time.Millisecond
)

// poll is the loop behind Eventually, for callers that have no testing.TB
// (a TestMain starting Redis) or want the reason it gave up. It runs check
// until it returns nil (poll returns nil), timeout has passed (the last
// error check returned), or exited is closed (errExited: the process being
// waited for is gone). A nil exited never closes.
func poll(timeout time.Duration, exited <-chan struct{}, check func() error) error {
	deadline := time.Now().Add(timeout)
	wait := pollFirst
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-exited:
			t.Stop()
			return errExited
		case <-t.C:
		}
		wait = min(2*wait, pollMax)
	}
}
