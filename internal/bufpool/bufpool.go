// Package bufpool lends the large byte buffers a request reads into and
// drops once its answer is written: a backend's list page (hundreds of
// kilobytes, read whole before it is merged) and the renamed copies of
// its items. Allocated fresh for every page, they were most of what a
// list walk allocated, and the collector's cycles, the zeroing of each
// new buffer and the scavenger handing their memory back to the kernel
// between walks cost about a fifth of the gateway's CPU per listed item
// (BENCHMARKS.md). Buffers come in power-of-two sizes, each size a
// sync.Pool; a buffer given back must no longer be read or written by
// anyone, which is the lender's whole contract.
package bufpool

import (
	"math/bits"
	"sync"
)

// The sizes pooled: 4 KiB to 1 MiB. Get of more allocates, and Put of a
// buffer whose capacity is not one of the sizes drops it.
const (
	minShift = 12
	maxShift = 20
	// MaxSize is the largest buffer Get lends from a pool.
	MaxSize = 1 << maxShift
)

var pools [maxShift - minShift + 1]sync.Pool // of *[]byte

// class is the index of the smallest pooled size of at least n bytes;
// ok is false past MaxSize.
func class(n int) (int, bool) {
	if n > MaxSize {
		return 0, false
	}
	if n <= 1<<minShift {
		return 0, true
	}
	return bits.Len(uint(n-1)) - minShift, true
}

// Get returns a buffer of at least n bytes, its length its capacity (a
// power of two from 4 KiB), with whatever bytes it held before: callers
// write before they read. Past MaxSize it is a new buffer of n bytes.
func Get(n int) []byte {
	c, ok := class(n)
	if !ok {
		return make([]byte, n)
	}
	if p, _ := pools[c].Get().(*[]byte); p != nil {
		return *p
	}
	return make([]byte, 1<<(c+minShift))
}

// Put gives b back for a later Get. Nothing may use b, or any slice of
// it, afterwards. A buffer not made by Get (its capacity not a pooled
// size) is left to the collector.
func Put(b []byte) {
	n := cap(b)
	if n < 1<<minShift || n > MaxSize || n&(n-1) != 0 {
		return
	}
	c, _ := class(n)
	b = b[:n]
	pools[c].Put(&b)
}

// Lease holds buffers lent for one piece of work, given back together
// (Release) once nothing reads them. Its methods are safe for concurrent
// use: the backends of a list page are read concurrently.
type Lease struct {
	mu   sync.Mutex
	bufs [][]byte
}

// Get is bufpool.Get, the buffer recorded for Release.
func (l *Lease) Get(n int) []byte {
	b := Get(n)
	l.mu.Lock()
	l.bufs = append(l.bufs, b)
	l.mu.Unlock()
	return b
}

// Release gives every buffer recorded back. A nil Lease has nothing.
func (l *Lease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	bufs := l.bufs
	l.bufs = nil
	l.mu.Unlock()
	for _, b := range bufs {
		Put(b)
	}
}
