package session

// Test-only access to a hold's internals: a test that needs a backend
// listener to be receiving before it makes the backend send something
// waits on the runtime's own signal rather than on a guess.

// ListenersUp returns the channel the hold closes once the listeners of
// its latest rebuild are receiving (or have failed their first try); from
// then on nothing the backends send them is missed.
func ListenersUp(e *SessionEvents) <-chan struct{} {
	e.ss.mu.Lock()
	defer e.ss.mu.Unlock()
	return e.ss.ready
}

// ListenersDrained returns the channel the hold closes once the listeners
// its latest rebuild replaced have stopped (at once when it replaced
// none): from then on only the new listeners hear the backends.
func ListenersDrained(e *SessionEvents) <-chan struct{} {
	e.ss.mu.Lock()
	defer e.ss.mu.Unlock()
	return e.ss.drained
}
