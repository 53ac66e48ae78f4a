// Package store keeps everything a gateway session needs between requests:
// the session record, each backend's capability snapshot, resource
// subscriptions and shared signing keys. It is the only place session state
// lives, so any gateway instance can serve any request.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned for a session that does not exist or has expired.
var ErrNotFound = errors.New("store: session not found")

// Session is the durable record of one downstream MCP session.
type Session struct {
	// ID is the Mcp-Session-Id issued to the client. Not serialised: it is the key.
	ID string `json:"-"`
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
	Pending map[string]string `json:"-"`
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
	SessionID string `json:"sessionId,omitempty"`
}

// OK reports whether the backend initialized successfully.
func (b *BackendSnapshot) OK() bool { return b != nil && b.Error == "" }

// Store is the shared state behind every gateway instance. Every key it
// writes carries a TTL; every session read refreshes it (sliding expiry).
type Store interface {
	// CreateSession writes the session record, its backend snapshots and its
	// subscriptions, all expiring after ttl (cancel marks it is given live
	// DefaultCancelMarkTTL). ErrLimit if the client's initialize params are
	// over MaxClientMetadataBytes (see session_limits.go).
	CreateSession(ctx context.Context, s *Session, ttl time.Duration) error
	// LoadSession returns the full session (record, snapshots, subscriptions)
	// and refreshes its TTL, in one round trip. ErrNotFound if absent.
	LoadSession(ctx context.Context, id string, ttl time.Duration) (*Session, error)
	// PutBackends replaces the given backend snapshots of an existing
	// session. It never recreates a deleted session: ErrNotFound if absent.
	PutBackends(ctx context.Context, id string, snaps []*BackendSnapshot, ttl time.Duration) error
	// SetLogLevel records the session's logging level. ErrNotFound if absent.
	SetLogLevel(ctx context.Context, id, level string, ttl time.Duration) error
	// AddSubscription / RemoveSubscription record a resource subscription
	// (downstream URI). ErrNotFound if the session is absent. ErrLimit, and
	// no change, for a new subscription past MaxSubscriptions or a URI over
	// MaxSubscriptionURIBytes.
	AddSubscription(ctx context.Context, id, uri string, ttl time.Duration) error
	RemoveSubscription(ctx context.Context, id, uri string, ttl time.Duration) error
	// DeleteSession removes every key of the session (record, event log,
	// stream claim). ErrNotFound if the record was absent.
	DeleteSession(ctx context.Context, id string) error
	// SigningKey returns the 32-byte key called name that every instance
	// shares, in one round trip, and refreshes its TTL. When the store
	// holds none (first use, or the store lost its data), candidate
	// becomes the key, or a random one when candidate is nil, unless
	// another caller's got there first: every caller gets the key that won.
	SigningKey(ctx context.Context, name string, candidate []byte) ([]byte, error)
	// MarkCancelled records that the client cancelled request reqID and
	// broadcasts msg (Kind BusCancel) in the same command, so an instance
	// either receives the broadcast or sees the mark when it loads the
	// session: a cancel is never lost, even one that overtakes its request.
	// The mark lives markTTL (the session, ttl); a session keeps at most
	// MaxCancelMarks live marks, dropping the oldest for a new one, and an
	// id over MaxCancelIDBytes is broadcast but never marked.
	MarkCancelled(ctx context.Context, id, reqID string, msg BusMessage, markTTL, ttl time.Duration) error
	// ClearCancelled removes a cancellation mark once it has been acted on.
	// A missing session or mark is not an error; the TTL is not refreshed.
	ClearCancelled(ctx context.Context, id, reqID string) error
	// AddPending / RemovePending record a server-to-client request awaiting
	// the client's response, and which instance waits for it. AddPending
	// refreshes the TTL and returns ErrNotFound for an absent session;
	// RemovePending, like ClearCancelled, never fails on an absent one.
	AddPending(ctx context.Context, id, requestID, instance string, ttl time.Duration) error
	RemovePending(ctx context.Context, id, requestID string) error
	// PostAnswer stores the client's answer (data) to pending request
	// requestID in the session and publishes msg, in one step, so an answer
	// whose message is lost still reaches the waiter (see TakeAnswer).
	// ErrNotFound if the session or the pending entry is absent.
	PostAnswer(ctx context.Context, id, requestID string, data []byte, msg BusMessage, ttl time.Duration) error
	// TakeAnswer returns and removes the stored answer to requestID, or nil
	// if there is none (yet). RemovePending removes it as well.
	TakeAnswer(ctx context.Context, id, requestID string) ([]byte, error)

	// Publish broadcasts a message, with From set to InstanceID, to every
	// gateway instance sharing the store (this one included). Delivery is
	// best effort: a message can be lost (Redis connection drop, full
	// in-memory queue), which is why cancels and pending requests are also
	// marked in the session.
	Publish(ctx context.Context, msg BusMessage) error
	// Subscribe calls fn for every broadcast message, in order, from one
	// goroutine, until the returned stop func (idempotent) is called. The
	// store keeps one subscription for all callers. fn must not block and
	// must not call Close. A message published after Subscribe returns is
	// delivered (barring loss, see Publish); to not miss a cancel or a
	// response, subscribe first, then load the session and check its marks.
	Subscribe(fn func(BusMessage)) (stop func())
	// InstanceID identifies this store handle (one per gateway process).
	InstanceID() string

	// AppendEvent appends an SSE event to the session's bounded event log
	// (at most maxLen events, oldest dropped) and returns its event id.
	// ErrNotFound if the session is absent.
	AppendEvent(ctx context.Context, id string, data []byte, maxLen int, ttl time.Duration) (string, error)
	// AppendStreamEvent is AppendEvent for an event of one of the session's
	// other streams (a call's answer streamed on its POST), tagged with
	// that stream's id so readers can tell the streams apart. The log and
	// its ids are shared: ids order every stream's events together.
	AppendStreamEvent(ctx context.Context, id, stream string, data []byte, maxLen int, ttl time.Duration) (string, error)
	// EventsAfter returns the events logged after eventID (exclusive),
	// oldest first, at most limit (limit < 1: no limit). An id older than
	// the oldest retained event returns all retained events; a missing
	// session or log returns none. ErrBadEventID for an id that is not of
	// the form the log issues ("<digits>-<digits>").
	EventsAfter(ctx context.Context, id, eventID string, limit int) ([]Event, error)

	// LatestEventID returns the id of the newest logged event, or "0-0"
	// when the log is empty: the position a new stream starts from.
	LatestEventID(ctx context.Context, id string) (string, error)

	// StartCallStream logs the first event of call stream `stream` (tagged
	// as AppendStreamEvent tags it) with the call's request id (JSON text),
	// and gives the stream a lease of leaseTTL, in one step (see
	// call_streams.go). ErrNotFound if the session is absent.
	StartCallStream(ctx context.Context, id, stream string, requestID, data []byte, maxLen int, leaseTTL, ttl time.Duration) (string, error)
	// RenewCallLease extends the stream's lease; false when it has lapsed
	// or the stream has ended: a resume may already have given up on it.
	RenewCallLease(ctx context.Context, id, stream string, leaseTTL time.Duration) (bool, error)
	// EndCallStream logs the call's answer as the stream's last event and
	// drops its lease, in one step. ErrNotFound if the session is absent.
	EndCallStream(ctx context.Context, id, stream string, data []byte, maxLen int, ttl time.Duration) (string, error)
	// CallStreamEventsAfter returns what is known of call stream `stream`
	// and its logged events after eventID (at most limit; < 1: no limit),
	// the lease read before the log. ErrNotFound when the log holds no
	// event of the stream; ErrBadEventID for an id the log never issued
	// (malformed, or after the newest event).
	CallStreamEventsAfter(ctx context.Context, id, stream, eventID string, limit int) (*CallStream, []Event, error)

	// ClaimStream makes owner the holder of the session's GET stream for
	// ttl and returns the previous holder ("" if none). ErrNotFound if the
	// session is absent.
	ClaimStream(ctx context.Context, id, owner string, ttl time.Duration) (previous string, err error)
	// RefreshStream extends the claim if owner still holds it.
	RefreshStream(ctx context.Context, id, owner string, ttl time.Duration) (held bool, err error)
	// ReleaseStream drops the claim if owner still holds it.
	ReleaseStream(ctx context.Context, id, owner string) error

	// Ping checks the store is reachable.
	Ping(ctx context.Context) error
	// Close releases connections and background goroutines.
	Close() error
}

// ErrBadEventID is returned for a Last-Event-ID the event log never issued.
var ErrBadEventID = errors.New("store: malformed event id")

// Event is one entry of a session's event log.
type Event struct {
	ID   string
	Data []byte
	// Stream is the id of the stream the event belongs to: "" for the
	// session's GET stream, else the tag given to AppendStreamEvent.
	Stream string
}

// Bus message kinds.
const (
	// BusCancel: the client cancelled request ID of Session.
	BusCancel = "cancel"
	// BusResponse: the client answered server-to-client request ID; Data
	// is the JSON-RPC response.
	BusResponse = "response"
	// BusNotify: event ID was appended to the session's event log by an
	// instance with no client attached; the instance streaming the
	// session, if any, sends its client what it has not had yet.
	BusNotify = "notify"
	// BusStreamTaken: another instance now holds the session's GET stream.
	BusStreamTaken = "stream-taken"
	// BusSubscriptions: the session's resource subscriptions changed.
	BusSubscriptions = "subscriptions"
	// BusSessionEnded: the session was deleted; its stream holder stops.
	BusSessionEnded = "session-ended"
	// BusListChanged: backend ID ("<vhost>/<key>") announced a list
	// change; instances drop its cached list pages. Session is empty.
	BusListChanged = "list-changed"
)

// BusMessage is what instances tell each other.
type BusMessage struct {
	Kind    string          `json:"k"`
	Session string          `json:"s"`
	ID      string          `json:"i,omitempty"`
	Data    json.RawMessage `json:"d,omitempty"`
	// From is the InstanceID of the publisher.
	From string `json:"f,omitempty"`
	// To, when set, is the only instance meant to act on the message.
	To string `json:"t,omitempty"`
}
