// Package bufpool lends the large byte buffers a request reads into and
// drops once its answer is written: a backend's list page (hundreds of
// kilobytes, read whole before it is merged). Allocated fresh for every
// page, they were most of what a list walk allocated, and the collector's
// cycles, the zeroing of each new buffer and the scavenger handing their
// memory back to the kernel between walks cost about a fifth of the
// gateway's CPU per listed item (docs/design/benchmarks-history.md). Buffers come in sizes a
// power of two and one and a half times one, each size a sync.Pool: a
// buffer is at most half as large again as asked for, about a sixth on
// average (with powers of two alone, a 155 kB page held 256 kB). A buffer
// given back must no longer be read or written by anyone, which is the
// lender's whole contract.
package bufpool

import (
	"math/bits"
	"sync"
)

// The sizes pooled: 4 KiB, 6 KiB, 8 KiB, 12 KiB, ... 768 KiB, 1 MiB. Get
// of more allocates, and Put of a buffer whose capacity is not one of the
// sizes drops it.
const (
	minShift = 12
	maxShift = 20
	// MaxSize is the largest buffer Get lends from a pool.
	MaxSize = 1 << maxShift
)

var pools [2*(maxShift-minShift) + 1]sync.Pool // of *[]byte

// size is the capacity of class c's buffers: 2^(minShift+c/2), times 1.5
// for odd c.
func size(c int) int {
	return (1 << (minShift + c/2)) * (2 + c%2) / 2
}

// class is the index of the smallest pooled size of at least n bytes;
// ok is false past MaxSize.
func class(n int) (int, bool) {
	if n > MaxSize {
		return 0, false
	}
	if n <= 1<<minShift {
		return 0, true
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	if n <= 3<<(k-2) {
		return 2*(k-1-minShift) + 1, true
	}
	return 2 * (k - minShift), true
}

// Get returns a buffer of at least n bytes, its length its capacity (one
// of the sizes above), with whatever bytes it held before: callers
// write before they read. Past MaxSize it is a new buffer of n bytes.
func Get(n int) []byte {
	c, ok := class(n)
	if !ok {
		return make([]byte, n)
	}
	if p, _ := pools[c].Get().(*[]byte); p != nil {
		return *p
	}
	return make([]byte, size(c))
}

// Put gives b back for a later Get. Nothing may use b, or any slice of
// it, afterwards. A buffer not made by Get (its capacity not a pooled
// size) is left to the collector.
func Put(b []byte) {
	n := cap(b)
	c, ok := class(n)
	if !ok || size(c) != n {
		return
	}
	b = b[:n]
	pools[c].Put(&b)
}
