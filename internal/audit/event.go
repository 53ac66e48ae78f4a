// Package audit writes the audit trail: one JSON object per line for
// every routed request and every refusal that names a caller or a target,
// in a documented, stable schema (Event) a SIEM can map. Writing never
// blocks a request for long: lines wait in a bounded buffer, and a line
// that finds it full is dropped, counted and logged, never silently lost.
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
)

// Event is one audit line. The JSON field names are the schema (README
// "Audit trail"): add fields, never rename or repurpose one.
type Event struct {
	// Time is when the request arrived; written first, as "time" in RFC
	// 3339, UTC, to the millisecond.
	Time time.Time `json:"-"`
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
	Reason          string  `json:"reason,omitempty"`
	DurationMS      float64 `json:"duration_ms"`
	ProtocolVersion string  `json:"protocol_version,omitempty"`
	// SessionHash names a 2025-era session (a digest of its id, never the
	// id).
	SessionHash string `json:"session_hash,omitempty"`
	TraceID     string `json:"trace_id,omitempty"`
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
