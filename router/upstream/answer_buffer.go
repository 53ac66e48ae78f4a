package upstream

import "github.com/mcpgw/gateway/internal/bufpool"

// A backend's answer read from an event stream lies in a buffer of its
// own (sseReader.take), lent by bufpool. Most callers pass the answer on
// and let the collector have the buffer. A caller that knows when the
// answer's bytes are last read (a list page is read, merged into the
// gateway's page and dropped, all within one request) asks for the buffer
// with CallOptions.Answer and gives it back with Release: a walk over a
// large vhost then reads every page into a few buffers, not a new one
// each (docs/design/benchmarks-history.md, issue 24).

// AnswerBuffer receives the buffer of the answer of the call it was given
// to (CallOptions.Answer). The zero value is ready; it holds at most one
// buffer.
type AnswerBuffer struct{ b []byte }

// claim hands b, the buffer of the call's answer, to a if the call asked
// for it (a is not nil) and a holds none yet (a call retried keeps its
// first answer's buffer; the second goes to the collector). It reports
// whether b was taken.
func (a *AnswerBuffer) claim(b []byte) bool {
	if b == nil || a == nil || a.b != nil {
		return false
	}
	a.b = b
	return true
}

// Release gives the buffer back to bufpool. Nothing may read the answer's
// bytes (its Result, and anything sliced from it) afterwards. A nil
// AnswerBuffer, or one that received nothing, is a no-op.
func (a *AnswerBuffer) Release() {
	if a == nil || a.b == nil {
		return
	}
	bufpool.Put(a.b)
	a.b = nil
}
