package upstream

import "net/http"

// A backend call has a few optional arguments that only some callers
// give: headers of its own, a result check that walks the answer in the
// caller's pass, a buffer to receive the answer's bytes. They belong to
// one call and must reach nothing else (not a handshake, not a discover
// the connection makes on its own, not a reply), so they are an argument
// of that call, never a value of the context the connection and the
// caller's other requests share.

// CallOptions are one call's optional arguments (CallWith). The zero
// value is a plain Call.
type CallOptions struct {
	// Headers are added to the call's HTTP request to a 2026-07-28
	// backend (the Mcp-Param-* headers of a tools/call, say); the
	// headers the connection sets itself win over them. Other
	// generations and transports ignore them.
	Headers http.Header
	// ResultCheck, if set, takes over the checking of the answer's
	// result from the decoder (see wire.DecodeOwnedChecked, whose
	// contract it keeps: it walks the result starting at data[i] and
	// returns where it ends, or -1 when it is not valid JSON), for a
	// caller that walks the result anyway (a list page). It may be called
	// for more than the one answer the call returns (a retried call, a
	// stray response), and not at all (an error, a backend that answers
	// over the 2024-11-05 transport): the caller compares what it walked
	// with the Result it gets.
	ResultCheck func(data []byte, i int) (end int)
	// Answer, if set, receives the buffer the answer read from an event
	// stream lies in (answer_buffer.go); the caller gives it back with
	// Release once it has last read the answer.
	Answer *AnswerBuffer
}
