package store

import (
	"errors"
	"fmt"
	"time"
)

// Every request loads its whole session (one HGETALL on Redis), so whatever
// a client can add to a session is paid for by each of its later requests,
// on every instance. The fields a client's requests write are bounded here,
// in count and in size, and the same way by both stores:
//
//   - cancel marks (notifications/cancelled for a request not running):
//     only needed while a request may still arrive after its cancel, so
//     they expire after the mark TTL the caller gives (seconds), at most
//     MaxCancelMarks live at once (the oldest gives way), and an id longer
//     than MaxCancelIDBytes is never marked (its cancel is still
//     broadcast, so a running request still stops);
//   - subscriptions (resources/subscribe): at most MaxSubscriptions per
//     session, each URI at most MaxSubscriptionURIBytes; past either,
//     AddSubscription fails with ErrLimit and changes nothing;
//   - the client's initialize params kept in the record: ClientInfo and
//     ClientCapabilities together at most MaxClientMetadataBytes
//     (CreateSession fails with ErrLimit).
//
// Pending requests (p:) are written by the gateway, one per server-to-client
// request a backend makes during a call, and removed when that call's wait
// ends; an answer (a:) can only be stored for a pending id, replaces any
// earlier one, is bounded by the request body limit, and goes with it.
const (
	MaxCancelMarks          = 64
	MaxCancelIDBytes        = 200
	MaxSubscriptions        = 100
	MaxSubscriptionURIBytes = 1024
	MaxClientMetadataBytes  = 16 << 10
)

// DefaultCancelMarkTTL is the life of the cancel marks a session is created
// with (Session.Cancelled given to CreateSession).
const DefaultCancelMarkTTL = 30 * time.Second

// ErrLimit is returned by a write that would take a session past one of
// the limits above; the session is left as it was.
var ErrLimit = errors.New("store: session limit reached")

// markable reports whether a cancel for reqID gets a mark.
func markable(reqID string) bool { return len(reqID) <= MaxCancelIDBytes }

// checkClientMetadata enforces MaxClientMetadataBytes.
func checkClientMetadata(s *Session) error {
	if len(s.ClientInfo)+len(s.ClientCapabilities) > MaxClientMetadataBytes {
		return errClientMetadata
	}
	return nil
}

// checkSubscriptionURI enforces MaxSubscriptionURIBytes.
func checkSubscriptionURI(uri string) error {
	if len(uri) > MaxSubscriptionURIBytes {
		return errURITooLong
	}
	return nil
}

// The ErrLimit errors, naming the limit reached.
var (
	errClientMetadata = fmt.Errorf("%w: clientInfo and capabilities over %d bytes", ErrLimit, MaxClientMetadataBytes)
	errURITooLong     = fmt.Errorf("%w: subscription URI over %d bytes", ErrLimit, MaxSubscriptionURIBytes)
	errTooManySubs    = fmt.Errorf("%w: already %d subscriptions", ErrLimit, MaxSubscriptions)
)
