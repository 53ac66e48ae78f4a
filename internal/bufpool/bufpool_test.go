package bufpool

import "testing"

func TestGet_Sizes(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 6144}, {6144, 6144}, {6145, 8192},
		{155_000, 192 << 10}, {200_000, 256 << 10}, {256 << 10, 256 << 10}, {256<<10 + 1, 384 << 10},
		{768 << 10, 768 << 10}, {768<<10 + 1, MaxSize}, {MaxSize, MaxSize},
		{MaxSize + 1, MaxSize + 1}, // past the pools: exactly what was asked
	} {
		b := Get(tc.n)
		if len(b) != tc.want || cap(b) != tc.want {
			t.Errorf("Get(%d): len %d cap %d, want %d", tc.n, len(b), cap(b), tc.want)
		}
		Put(b)
	}
	// Every size lends at least what is asked and at most half as much again.
	for n := 4097; n <= MaxSize; n += 997 {
		if c, _ := class(n); size(c) < n || 2*size(c) > 3*n+3 || c > 0 && size(c-1) >= n {
			t.Fatalf("class(%d) = %d of size %d", n, c, size(c))
		}
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
	for _, b := range [][]byte{nil, make([]byte, 100), make([]byte, 5000), make([]byte, 7000), make([]byte, 2*MaxSize)} {
		Put(b) // must not panic, and must not be lent
	}
	for range 100 {
		if b := Get(5000); cap(b) != 6144 {
			t.Fatalf("Get(5000) lent a buffer of capacity %d", cap(b))
		}
	}
}
