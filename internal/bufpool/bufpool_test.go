package bufpool

import (
	"sync"
	"testing"
)

func TestGet_SizesArePowersOfTwo(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192},
		{155_000, 256 << 10}, {256 << 10, 256 << 10}, {MaxSize, MaxSize},
		{MaxSize + 1, MaxSize + 1}, // past the pools: exactly what was asked
	} {
		b := Get(tc.n)
		if len(b) != tc.want || cap(b) != tc.want {
			t.Errorf("Get(%d): len %d cap %d, want %d", tc.n, len(b), cap(b), tc.want)
		}
		Put(b)
	}
}

// A buffer given back is lent again (the pool keeps it until a GC: Put
// and Get here run with no allocation between them that could trigger
// one, and the test retries to ride out one that does).
func TestPut_BufferIsLentAgain(t *testing.T) {
	for range 10 {
		b := Get(100_000)
		b[0] = 42
		Put(b)
		c := Get(100_000)
		if &c[0] == &b[0] {
			return
		}
		Put(c)
	}
	t.Fatal("a buffer given back was never lent again")
}

func TestPut_ForeignBuffersAreDropped(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 100), make([]byte, 5000), make([]byte, 2*MaxSize)} {
		Put(b) // must not panic, and must not be lent
	}
	for range 100 {
		if b := Get(5000); cap(b) != 8192 {
			t.Fatalf("Get(5000) lent a buffer of capacity %d", cap(b))
		}
	}
}

func TestLease_ReleaseGivesEveryBufferBack(t *testing.T) {
	var l Lease
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				l.Get(20_000)
			}
		})
	}
	wg.Wait()
	if len(l.bufs) != 80 {
		t.Fatalf("lease holds %d buffers, want 80", len(l.bufs))
	}
	l.Release()
	if l.bufs != nil {
		t.Fatalf("lease still holds %d buffers after Release", len(l.bufs))
	}
	l.Release() // twice: nothing left
	var none *Lease
	none.Release()
}
