package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
)

// The gateway passes five kinds of id around, all strings on the wire. Each
// has its own type so one cannot be handed where another is meant (a
// call-stream id where a session id belongs compiles to nothing), and this
// file is the one place their formats are made.

// SessionID names a client session: the Mcp-Session-Id the gateway issued
// at initialize, and the key of the session's record in the store.
type SessionID string

// BackendSessionID is a backend's own Mcp-Session-Id, kept in a
// BackendSnapshot when the backend's session is reused across requests.
type BackendSessionID string

// CallStreamID names one streamed call within a session: the tag of its
// events in the session's event log and the prefix of their SSE ids.
type CallStreamID string

// ServerRequestID is the JSON-RPC id the gateway gave a server-to-client
// request (sampling, elicitation, roots) it forwarded to the client: the
// key of its pending and answer marks, whichever instance the answer
// reaches.
type ServerRequestID string

// EventID is an SSE event id: an entry of the session's event log
// ("<ms>-<seq>", event_log.go), or a call stream's event
// ("<stream>_<entry>", built by handler/session). Clients send it back in
// Last-Event-ID.
type EventID string

// NewSessionID returns 256 random bits as URL-safe base64: visible ASCII
// (the transport spec's rule for Mcp-Session-Id), far beyond guessing (at
// least 128 random bits would do), and free of the characters Redis
// Cluster hash tags give meaning to ('{', '}').
func NewSessionID() SessionID {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return SessionID(base64.RawURLEncoding.EncodeToString(b))
}

// NewCallStreamID returns a fresh call-stream id: "c" and 96 random bits as
// hex, short enough for every SSE id built on it.
func NewCallStreamID() CallStreamID { return CallStreamID(RandomID("c")) }

// NewServerRequestID returns a fresh id for a server-to-client request.
// The prefix makes the gateway's ids readable in the client's logs.
func NewServerRequestID() ServerRequestID { return ServerRequestID(RandomID("mcpgw-s-")) }

// RandomID returns 96 random bits as hex after a readable prefix: the
// gateway's ids for progress tokens, parked calls and stream owners, and
// the base of NewCallStreamID and NewServerRequestID.
func RandomID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// MarshalBinary lets go-redis take the ids as command arguments: it
// refuses named string types that do not implement it.
func (id SessionID) MarshalBinary() ([]byte, error)        { return []byte(id), nil }
func (id BackendSessionID) MarshalBinary() ([]byte, error) { return []byte(id), nil }
func (id CallStreamID) MarshalBinary() ([]byte, error)     { return []byte(id), nil }
func (id ServerRequestID) MarshalBinary() ([]byte, error)  { return []byte(id), nil }
func (id EventID) MarshalBinary() ([]byte, error)          { return []byte(id), nil }
