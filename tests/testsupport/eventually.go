package testsupport

import (
	"testing"
	"time"
)

// Eventually checks cond every 10ms until it holds or timeout passes. Use
// it only where no signal exists to wait on, e.g. for state another
// process writes to Redis on its own schedule.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
}
