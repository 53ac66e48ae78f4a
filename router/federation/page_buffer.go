package federation

import (
	"sync"
	"sync/atomic"
)

// A list page (770 kB for 1,000 tools) was a new buffer every time,
// zeroed, written once and dropped: with the list cache, most of the
// collector's work. A front that knows when a response has been written
// lends the request a buffer from a pool for its page (LendPageBuffer;
// the router's Call.Page), and takes it back after.

// PageBuffer is a buffer lent to one request for its list page.
type PageBuffer struct {
	b    []byte
	lent atomic.Bool // taken by the request's page
}

var pageBuffers = sync.Pool{New: func() any { return new(PageBuffer) }}

// maxPooledPage: a buffer grown past this (a page of huge items) is
// dropped when given back rather than kept in the pool.
const maxPooledPage = 4 << 20

// LendPageBuffer lends a buffer for the list page a request may build.
// The page a list request answers with is then that buffer's bytes:
// release gives it back, and must be called only once the response has
// been written and nothing reads its result any more.
func LendPageBuffer() (_ *PageBuffer, release func()) {
	pb := pageBuffers.Get().(*PageBuffer)
	return pb, func() {
		if cap(pb.b) > maxPooledPage {
			pb.b = nil
		}
		pb.b = pb.b[:0]
		pb.lent.Store(false)
		pageBuffers.Put(pb)
	}
}

// take is the buffer for a page, once (a second page of the same
// request, should there be one, gets a buffer of its own); nil when none
// was lent.
func (pb *PageBuffer) take() *PageBuffer {
	if pb == nil || !pb.lent.CompareAndSwap(false, true) {
		return nil
	}
	return pb
}
