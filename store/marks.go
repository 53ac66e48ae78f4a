package store

import (
	"context"
	"time"
)

// Marks is what crosses instances and must not be lost: a client's cancel
// of a request that may be running (or not yet arrived) on another
// instance, and a server-to-client request (sampling, elicitation, roots)
// whose answer the client may POST to another instance than the one
// waiting. Each is written into the session together with its bus message,
// in one step, so the other side either receives the message or finds the
// mark when it loads the session (LoadSession returns them as
// Session.Cancelled and Session.Pending); a lost broadcast costs a delay,
// never the exchange. The router's in-flight cancellation (MarkCancelled,
// ClearCancelled) and its server-to-client requests on a call's stream
// (AddPending, RemovePending, PostAnswer, TakeAnswer) need it.
type Marks interface {
	// MarkCancelled records that the client cancelled request reqID and
	// broadcasts msg (Kind BusCancel) in the same command, so an instance
	// either receives the broadcast or sees the mark when it loads the
	// session: a cancel is never lost, even one that overtakes its request.
	// The mark lives markTTL (the session, ttl); a session keeps at most
	// MaxCancelMarks live marks, dropping the oldest for a new one, and an
	// id over MaxCancelIDBytes is broadcast but never marked.
	MarkCancelled(ctx context.Context, id SessionID, reqID string, msg BusMessage, markTTL, ttl time.Duration) error
	// ClearCancelled removes a cancellation mark once it has been acted on.
	// A missing session or mark is not an error; the TTL is not refreshed.
	ClearCancelled(ctx context.Context, id SessionID, reqID string) error
	// AddPending / RemovePending record a server-to-client request awaiting
	// the client's response, and which instance waits for it. AddPending
	// refreshes the TTL and returns ErrNotFound for an absent session;
	// RemovePending, like ClearCancelled, never fails on an absent one.
	AddPending(ctx context.Context, id SessionID, requestID ServerRequestID, instance string, ttl time.Duration) error
	RemovePending(ctx context.Context, id SessionID, requestID ServerRequestID) error
	// PostAnswer stores the client's answer (data) to pending request
	// requestID in the session and publishes msg, in one step, so an answer
	// whose message is lost still reaches the waiter (see TakeAnswer).
	// ErrNotFound if the session or the pending entry is absent.
	PostAnswer(ctx context.Context, id SessionID, requestID ServerRequestID, data []byte, msg BusMessage, ttl time.Duration) error
	// TakeAnswer returns and removes the stored answer to requestID, or nil
	// if there is none (yet). RemovePending removes it as well.
	TakeAnswer(ctx context.Context, id SessionID, requestID ServerRequestID) ([]byte, error)
}
