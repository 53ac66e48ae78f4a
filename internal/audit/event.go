// Package audit writes the audit trail: one JSON object per line for
// every routed request, every refusal that names a caller or a target and
// every end of a gateway-run task, in a documented, stable schema (Event)
// a SIEM can map. Best effort with counted loss: writing never blocks a
// request, and a line that cannot be written (a full buffer, a failed
// write, a shutdown that cannot wait) is dropped, counted by reason and
// logged, never silently lost; the output always parses as JSON lines.
package audit

import (
	"encoding/json"
	"time"
)

// Outcomes of an audited request.
const (
	OutcomeOK              = "ok"              // answered with a result
	OutcomeToolError       = "tool_error"      // a tools/call result with isError
	OutcomeError           = "error"           // a JSON-RPC error
	OutcomeDenied          = "denied"          // an access rule or a plugin refused it
	OutcomeRateLimited     = "rate_limited"    // a rate limit or a bound refused it (429)
	OutcomeUnauthenticated = "unauthenticated" // no valid token (401)
	OutcomeCancelled       = "cancelled"       // a task its client cancelled (EventTaskEnd)
)

// EventTaskEnd is the Event of a line recording a gateway-run task's end
// (lines without an event record a request).
const EventTaskEnd = "task_end"

// Event is one audit line. The JSON field names are the schema
// (docs/reference/audit.md): add fields, never rename or repurpose one.
type Event struct {
	// Time is when the request arrived (a task's end: when it ended);
	// written first, as "time" in RFC 3339, UTC, to the millisecond.
	Time time.Time `json:"-"`
	// Event is what the line records when it is not a request:
	// EventTaskEnd.
	Event string `json:"event,omitempty"`
	// Principal as the gateway knows it ({iss}#{sub} with several
	// issuers); empty when unauthenticated.
	Principal string `json:"principal,omitempty"`
	VHost     string `json:"vhost"`
	Method    string `json:"method,omitempty"`
	// Name is the published tool or prompt name, or resource URI, the
	// request targets.
	Name string `json:"name,omitempty"`
	// Backend is the backend key the request was routed to.
	Backend string `json:"backend,omitempty"`
	Outcome string `json:"outcome"`
	// Code is the JSON-RPC error code, when the answer was an error.
	Code *int64 `json:"code,omitempty"`
	// Reason says which access rule, plugin or limit refused the request,
	// or why a token was refused (never the token).
	Reason string `json:"reason,omitempty"`
	// DurationMS is the gateway's time for the request (a task's end: how
	// long the task ran).
	DurationMS      float64 `json:"duration_ms"`
	ProtocolVersion string  `json:"protocol_version,omitempty"`
	// SessionHash names a 2025-era session (a digest of its id, never the
	// id).
	SessionHash string `json:"session_hash,omitempty"`
	// TaskHash names a gateway-run task (taskrun.IDDigest of its id): on
	// the request that created or answered it and on its end.
	TaskHash string `json:"task_hash,omitempty"`
	TraceID  string `json:"trace_id,omitempty"`
	// ArgumentsSHA256 is the SHA-256 (hex) of the canonical JSON of a
	// tools/call's arguments (audit.arguments: hash).
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Arguments are a tools/call's arguments (audit.arguments: full).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Client is the clientInfo the client gave, when known.
	Client *Client `json:"client,omitempty"`
	// RemoteAddr is the address the request came from: the connection's
	// peer, or the first untrusted hop of X-Forwarded-For when the peer is
	// a trusted proxy (audit.trusted_proxies).
	RemoteAddr string `json:"remote_addr,omitempty"`
}

// Client is a clientInfo's name and version.
type Client struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// line encodes e as one JSON line, "time" first.
func (e *Event) line() []byte {
	body, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	out := make([]byte, 0, len(body)+40)
	out = append(out, `{"time":"`...)
	out = e.Time.UTC().AppendFormat(out, "2006-01-02T15:04:05.000Z07:00")
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
	}
	out = append(out, body[1:]...)
	return append(out, '\n')
}
