package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// A call answered as an event stream is resumable on any instance: its
// events go to the session's event log, tagged with the call stream's id.
// Two more facts let a resume on another instance end properly, and both
// live with the log, so they are bounded and deleted with it:
//
//   - the stream's first event carries the call's JSON-RPC request id and
//     its last event (the answer) is flagged as such, so a Last-Event-ID
//     naming a stream that never existed is refused rather than followed,
//     and a stream whose owner died is answered with an error for the right
//     request id;
//   - the owner's lease, a key with a short TTL that the instance running
//     the call renews while it runs (see Leases; the one key of a session
//     DeleteSession leaves, it outlives a deleted session by one lease at
//     most).
//     A lapsed lease on a stream without an answer means the owner is gone:
//     its answer will never be logged.
//
// EndCallStream logs the answer and drops the lease in one step, and
// readers check the lease before they read the log, so a reader that sees
// the lease gone also sees an answer that was logged.

// CallStream is what a resume needs to know about one call stream.
type CallStream struct {
	// RequestID is the call's JSON-RPC id as JSON text (`7`, `"abc"`); nil
	// if the stream's first event has been trimmed from the log.
	RequestID json.RawMessage
	// Done: the call's answer is in the log.
	Done bool
	// Leased: the instance running the call still holds its lease.
	Leased bool
}

// Lost reports whether the call can never be answered: no answer logged,
// and its owner's lease has lapsed.
func (c *CallStream) Lost() bool { return c != nil && !c.Done && !c.Leased }

// maxCallStreamName bounds a call stream's name: it comes back from
// clients in Last-Event-ID and becomes part of a store key.
const maxCallStreamName = 64

// checkCallStream validates a call stream's name and log parameters.
func checkCallStream(stream CallStreamID, maxLen int, ttl time.Duration) error {
	if stream == "" || len(stream) > maxCallStreamName {
		return fmt.Errorf("store: call stream name of %d bytes (want 1 to %d)", len(stream), maxCallStreamName)
	}
	if maxLen < 1 {
		return fmt.Errorf("store: append event: maxLen %d must be at least 1", maxLen)
	}
	return checkTTL(ttl)
}
