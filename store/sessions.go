package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sessions is the session record and what the client made it hold: the
// negotiated protocol, each backend's capability snapshot, the log level
// and resource subscriptions. It is what lets any instance serve any
// request: the handler loads the session of every request (and deletes it
// on DELETE); the router creates it on initialize, writes back backend
// snapshots it re-probes, and records subscriptions and the log level.
// What a client can add to a session is bounded (the limits below).
type Sessions interface {
	// CreateSession writes the session record, its backend snapshots and its
	// subscriptions, all expiring after ttl (cancel marks it is given live
	// DefaultCancelMarkTTL). ErrLimit if the client's initialize params are
	// over MaxClientMetadataBytes (see the limits below).
	CreateSession(ctx context.Context, s *Session, ttl time.Duration) error
	// LoadSession returns the full session (record, snapshots, subscriptions)
	// and refreshes its TTL, in one round trip. ErrNotFound if absent.
	LoadSession(ctx context.Context, id SessionID, ttl time.Duration) (*Session, error)
	// PutBackends replaces the given backend snapshots of an existing
	// session. It never recreates a deleted session: ErrNotFound if absent.
	PutBackends(ctx context.Context, id SessionID, snaps []*BackendSnapshot, ttl time.Duration) error
	// SetLogLevel records the session's logging level. ErrNotFound if absent.
	SetLogLevel(ctx context.Context, id SessionID, level string, ttl time.Duration) error
	// AddSubscription / RemoveSubscription record a resource subscription
	// (downstream URI). ErrNotFound if the session is absent. ErrLimit, and
	// no change, for a new subscription past MaxSubscriptions or a URI over
	// MaxSubscriptionURIBytes.
	AddSubscription(ctx context.Context, id SessionID, uri string, ttl time.Duration) error
	RemoveSubscription(ctx context.Context, id SessionID, uri string, ttl time.Duration) error
	// DeleteSession removes every key of the session (record, event log,
	// stream claim). ErrNotFound if the record was absent.
	DeleteSession(ctx context.Context, id SessionID) error
}

// ErrNotFound is returned for a session that does not exist or has expired.
var ErrNotFound = errors.New("store: session not found")

// Session is the durable record of one downstream MCP session.
type Session struct {
	// ID is the Mcp-Session-Id issued to the client. Not serialised: it is the key.
	ID SessionID `json:"-"`
	// Principal is the authenticated caller (JWT sub, or "anonymous").
	Principal string `json:"principal"`
	// VHost is the virtual host the session was opened on.
	VHost string `json:"vhost"`
	// ProtocolVersion is the version negotiated with the downstream client.
	ProtocolVersion string `json:"protocolVersion"`
	// ClientInfo and ClientCapabilities are the client's initialize params, raw.
	ClientInfo         json.RawMessage `json:"clientInfo,omitempty"`
	ClientCapabilities json.RawMessage `json:"clientCapabilities,omitempty"`
	// LogLevel is the level last set with logging/setLevel ("" = unset).
	LogLevel  string    `json:"logLevel,omitempty"`
	CreatedAt time.Time `json:"createdAt"`

	// Backends holds one snapshot per backend key. Stored beside the record
	// so a single snapshot can be updated without rewriting the session.
	Backends map[string]*BackendSnapshot `json:"-"`
	// Subscriptions holds the downstream resource URIs the client subscribed to.
	Subscriptions []string `json:"-"`
	// Cancelled holds the ids (JSON text of the JSON-RPC id, e.g. `7` or
	// `"abc"`) of requests the client cancelled, possibly before the request
	// itself reached any instance, whose marks have not expired yet. See
	// MarkCancelled.
	Cancelled map[string]bool `json:"-"`
	// Pending maps the gateway-issued id of each server-to-client request
	// (sampling, elicitation, roots) awaiting the client's answer to the
	// instance that waits for it. See AddPending.
	Pending map[ServerRequestID]string `json:"-"`
}

// BackendSnapshot is what the gateway learned from one backend's initialize.
type BackendSnapshot struct {
	Key string `json:"key"`
	// Error is non-empty when the last initialize failed; the backend is
	// re-probed on later requests.
	Error    string    `json:"error,omitempty"`
	ProbedAt time.Time `json:"probedAt"`

	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	ServerInfo      json.RawMessage `json:"serverInfo,omitempty"`
	Instructions    string          `json:"instructions,omitempty"`
	// Stateless is true when the backend issued no Mcp-Session-Id.
	Stateless bool `json:"stateless,omitempty"`
	// SessionID is the backend's own session id, kept in `session: reuse` mode.
	SessionID BackendSessionID `json:"sessionId,omitempty"`
}

// OK reports whether the backend initialized successfully.
func (b *BackendSnapshot) OK() bool { return b != nil && b.Error == "" }

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
