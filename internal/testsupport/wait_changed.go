package testsupport

import (
	"sync"
	"time"
)

// waitChanged is how a recorder's Wait methods wait without polling:
// check runs under mu and reports whether what is awaited has happened,
// with the recorder's change channel (closed and replaced on every change
// it records); waitChanged sleeps on that channel between checks, until
// check holds or timeout passes, and reports whether it held.
func waitChanged(mu *sync.Mutex, timeout time.Duration, check func() (done bool, changed <-chan struct{})) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		mu.Lock()
		done, changed := check()
		mu.Unlock()
		if done {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}
