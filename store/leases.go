package store

import (
	"context"
	"time"
)

// Leases are short-lived claims that one instance is doing something for a
// session, so the others can tell it is still alive: the holder of the
// session's GET stream (only one instance streams a session; a new GET
// anywhere takes over and the old holder is told on the bus), and the
// instance running a call answered as a stream (whose lease is taken with
// the call stream's first event, see StartCallStream and call_streams.go).
// A lease lapses unless its holder renews it, so a dead instance gives it
// up by itself. The router's GET-stream holds (ClaimStream, RefreshStream,
// ReleaseStream) and its resumable calls (RenewCallLease) need it.
type Leases interface {
	// ClaimStream makes owner the holder of the session's GET stream for
	// ttl and returns the previous holder ("" if none). ErrNotFound if the
	// session is absent.
	ClaimStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (previous string, err error)
	// RefreshStream extends the claim if owner still holds it.
	RefreshStream(ctx context.Context, id SessionID, owner string, ttl time.Duration) (held bool, err error)
	// ReleaseStream drops the claim if owner still holds it.
	ReleaseStream(ctx context.Context, id SessionID, owner string) error
	// RenewCallLease extends the stream's lease; false when it has lapsed
	// or the stream has ended: a resume may already have given up on it.
	RenewCallLease(ctx context.Context, id SessionID, stream CallStreamID, leaseTTL time.Duration) (bool, error)
}
