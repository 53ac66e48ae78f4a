package main

import (
	"math"
	"math/bits"
	"sort"
	"time"
)

// Histogram records latencies in a log-linear layout (the HdrHistogram
// idea): values below 256ns are exact, above that each power of two is
// split into 128 buckets, so a reported percentile is within 0.4% of the
// recorded value whatever its magnitude. It has a fixed size (about 60 KB),
// records without allocating and merges by adding counts, so every worker
// keeps its own and they are combined once at the end.
//
// The zero value is ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts   []uint64
	n        uint64
	sum      float64 // nanoseconds, for the mean
	min, max int64
}

const (
	subBits    = 7
	subBuckets = 1 << subBits // buckets per power of two
	// numBuckets covers every non-negative int64: the largest shift is
	// 63-subBits, and the index is shift*subBuckets + [subBuckets, 2*subBuckets).
	numBuckets = (64-subBits-1)*subBuckets + 2*subBuckets
)

// bucketOf returns the bucket index of a non-negative value.
func bucketOf(v uint64) int {
	shift := bits.Len64(v) - (subBits + 1)
	if shift <= 0 {
		return int(v) // below 2*subBuckets: exact
	}
	return shift*subBuckets + int(v>>uint(shift))
}

// bucketRange returns the lowest and highest value that land in bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subBuckets {
		return uint64(i), uint64(i)
	}
	shift := uint(i/subBuckets - 1)
	m := uint64(i - int(shift)*subBuckets) // in [subBuckets, 2*subBuckets)
	return m << shift, (m+1)<<shift - 1
}

// Record adds one latency. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	if h.counts == nil {
		h.counts = make([]uint64, numBuckets)
	}
	h.counts[bucketOf(uint64(v))]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, numBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Min and Max are exact.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max is the largest recorded value, exact.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean is exact (up to float rounding).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100): the
// smallest recorded value such that at least p% of the values are less than
// or equal to it, within the bucket resolution. The value reported for a
// bucket is its midpoint, clamped to the exact minimum and maximum, so
// Percentile(100) is Max and a histogram of one value reports that value.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.n)))
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := int64(lo + (hi-lo)/2)
			return time.Duration(max(h.min, min(v, h.max)))
		}
	}
	return time.Duration(h.max)
}

// median returns the median of xs (the mean of the two middle values for
// an even count), or NaN for no values. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
