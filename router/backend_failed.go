package router

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/gateway/store"
)

// A backend whose snapshot records a failed handshake is tried again at
// most once per Options.ReprobeInterval (reprobeDue), for every method:
// until then a request that needs it gets the recorded failure at once.
// Without this, a backend that hangs at initialize cost one request its
// timeout twice (a 2026-07-28 call waited for its discovery's initialize,
// then for the call's own), and a 2025 session's first call waited again
// right after its initialize had failed. Lists skipped such a backend
// already; routed methods and listens now do the same.

// recentFailure is the recorded failure of a backend not yet due for
// another attempt.
type recentFailure struct {
	key string
	msg string // the snapshot's Error
	age time.Duration
}

func (e *recentFailure) Error() string {
	msg := e.msg
	if !strings.HasPrefix(msg, "backend "+strconv.Quote(e.key)) {
		msg = fmt.Sprintf("backend %q: %s", e.key, msg)
	}
	return fmt.Sprintf("%s (last attempt %.1fs ago)", msg, e.age.Seconds())
}

// notDue returns the failure recorded in snap when the backend may not be
// tried again yet, nil when it may (or snap records no failure).
func (r *Router) notDue(key string, snap *store.BackendSnapshot) error {
	if snap.OK() || r.reprobeDue(snap) {
		return nil
	}
	return &recentFailure{key: key, msg: snap.Error, age: time.Since(snap.ProbedAt)}
}
