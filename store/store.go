// Package store keeps everything a gateway session needs between requests:
// the session record, each backend's capability snapshot, resource
// subscriptions and shared signing keys. It is the only place session state
// lives, so any gateway instance can serve any request.
//
// The store is split by role, one small interface each, so a caller (and a
// reader) sees only the part it works with:
//
//   - Sessions (sessions.go): the session record and what it holds;
//   - Marks (marks.go): cancels and server-to-client requests that cross
//     instances, written into the session with their bus message;
//   - Bus (bus.go): best-effort broadcast between instances;
//   - EventLog (event_log.go): the session's bounded log of SSE events,
//     and the event-id format;
//   - Leases (leases.go): who holds a session's GET stream, and which
//     instance still runs a streamed call;
//   - SigningKeys (signing_keys.go): keys every instance shares;
//   - RateLimits (rate_limits.go): request counters every instance shares;
//   - Tasks (tasks.go): the tasks the gateway runs itself, their leases,
//     input rounds and results;
//   - UserTokens (user_tokens.go): users' sealed third-party tokens;
//   - OAuthRecords (oauth_records.go): the gateway's own authorization
//     server's clients, codes, consents, grants and signing keys;
//   - BackendSessions (backend_sessions.go): backend sessions kept per
//     principal, and the index that closes those no longer kept.
//
// Store is all of them. Redis (redis.go, redis_<role>.go) and Memory
// (memory.go, memory_<role>.go) each implement the whole Store, since
// several roles write the same session in one step.
package store

import (
	"context"
	"fmt"
	"time"
)

// Store is the shared state behind every gateway instance. Every key it
// writes carries a TTL; every session read refreshes it (sliding expiry).
type Store interface {
	Sessions
	Marks
	Bus
	EventLog
	Leases
	SigningKeys
	RateLimits
	Tasks
	UserTokens
	OAuthRecords
	BackendSessions

	// Ping checks the store is reachable.
	Ping(ctx context.Context) error
	// Close releases connections and background goroutines.
	Close() error
}

// checkTTL rejects TTLs that would expire a key at once (PEXPIRE 0 deletes);
// both stores apply it to every TTL they are given.
func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("store: ttl %v must be at least 1ms", ttl)
	}
	return nil
}
