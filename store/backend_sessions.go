package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// BackendSessions is what the gateway keeps of the backends' own MCP
// sessions beyond a gateway session's snapshots (issue 36): the backend
// session of each principal of a `session: per-principal` backend, and an
// index of every backend session the gateway keeps open, so that one its
// owner no longer keeps (the gateway session expired or was deleted, or
// replaced it with another; a principal's record expired or was replaced)
// is closed at the backend by whichever instance finds it, once.
//
// Nothing here is shared by two principals: a principal's record is keyed
// by an owner string the router derives from the principal, vhost and
// backend; a gateway session's backend sessions stay in its snapshots.
type BackendSessions interface {
	// PrincipalBackendSession returns the backend session kept under
	// owner, refreshing its TTL; "" when none is kept.
	PrincipalBackendSession(ctx context.Context, owner string, ttl time.Duration) (BackendSessionID, error)
	// SwapPrincipalBackendSession makes next owner's backend session when
	// the one kept is old ("": none is kept), and returns the one kept
	// afterwards: next when it swapped, another when a concurrent request
	// kept its own first (the caller then closes next).
	SwapPrincipalBackendSession(ctx context.Context, owner string, old, next BackendSessionID, ttl time.Duration) (BackendSessionID, error)
	// TrackBackendSessions indexes kept backend sessions; each is checked
	// first after checkAfter.
	TrackBackendSessions(ctx context.Context, kept []KeptBackendSession, checkAfter time.Duration) error
	// ReleasedBackendSessions checks at most n tracked backend sessions
	// that are due and returns those their owner no longer keeps, removed
	// from the index: each is returned to one caller only, which closes it
	// at the backend. Those still kept are checked again after checkAfter.
	ReleasedBackendSessions(ctx context.Context, n int, checkAfter time.Duration) ([]KeptBackendSession, error)
}

// KeptBackendSession is one backend session the gateway keeps open, and
// its owner: a gateway session (its snapshot of Backend names ID) or a
// principal's record (Owner, as given to SwapPrincipalBackendSession).
type KeptBackendSession struct {
	Session SessionID        `json:"s,omitempty"`
	Owner   string           `json:"o,omitempty"`
	VHost   string           `json:"v"`
	Backend string           `json:"b"`
	ID      BackendSessionID `json:"id"`
}

// MaxBackendSessionOwner bounds an owner string (it is part of a key).
const MaxBackendSessionOwner = 200

// checkKept validates a kept session before it is indexed.
func checkKept(k KeptBackendSession) error {
	switch {
	case k.ID == "":
		return errors.New("store: track backend session: empty id")
	case (k.Session == "") == (k.Owner == ""):
		return errors.New("store: track backend session: want exactly one owner")
	case len(k.Owner) > MaxBackendSessionOwner:
		return fmt.Errorf("store: backend session owner over %d bytes", MaxBackendSessionOwner)
	}
	return nil
}

// member is a kept session's index entry.
func (k KeptBackendSession) member() string {
	raw, _ := json.Marshal(k)
	return string(raw)
}

// keptFrom decodes an index entry; false for one this version cannot read.
func keptFrom(member string) (KeptBackendSession, bool) {
	var k KeptBackendSession
	return k, json.Unmarshal([]byte(member), &k) == nil && checkKept(k) == nil
}
