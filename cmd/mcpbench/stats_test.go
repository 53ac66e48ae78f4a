package main

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// within reports whether got is within rel (relative) of want.
func within(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}

func TestPercentilesOfKnownData(t *testing.T) {
	// 1ms, 2ms, ..., 1000ms in shuffled order: the nearest-rank p-th
	// percentile is exactly p*10 ms.
	var h Histogram
	for _, i := range rand.Perm(1000) {
		h.Record(time.Duration(i+1) * time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 500 * time.Millisecond},
		{90, 900 * time.Millisecond},
		{99, 990 * time.Millisecond},
		{99.9, 999 * time.Millisecond},
		{0.1, 1 * time.Millisecond},
	} {
		if got := h.Percentile(c.p); !within(got, c.want, 0.004) {
			t.Errorf("p%v = %v, want %v (±0.4%%)", c.p, got, c.want)
		}
	}
	if h.Percentile(100) != time.Second || h.Max() != time.Second {
		t.Errorf("p100 = %v, max = %v, want exactly 1s", h.Percentile(100), h.Max())
	}
	if h.Min() != time.Millisecond {
		t.Errorf("min = %v", h.Min())
	}
	if want := 500500 * time.Microsecond; h.Mean() != want {
		t.Errorf("mean = %v, want %v", h.Mean(), want)
	}
	if h.Count() != 1000 {
		t.Errorf("count = %d", h.Count())
	}
}

func TestPercentilesSkewed(t *testing.T) {
	// 98 fast requests and two slow ones: p50 and p90 are fast, p99 slow.
	var h Histogram
	for range 98 {
		h.Record(2 * time.Millisecond)
	}
	h.Record(300 * time.Millisecond)
	h.Record(400 * time.Millisecond)
	if got := h.Percentile(50); !within(got, 2*time.Millisecond, 0.004) {
		t.Errorf("p50 = %v", got)
	}
	if got := h.Percentile(98); !within(got, 2*time.Millisecond, 0.004) {
		t.Errorf("p98 = %v", got)
	}
	if got := h.Percentile(99); !within(got, 300*time.Millisecond, 0.004) {
		t.Errorf("p99 = %v, want 300ms", got)
	}
	if got := h.Percentile(99.5); !within(got, 400*time.Millisecond, 0.004) {
		t.Errorf("p99.5 = %v, want 400ms", got)
	}
}

func TestHistogramSmallValuesExact(t *testing.T) {
	var h Histogram
	for v := range 256 {
		h.Record(time.Duration(v))
	}
	for _, p := range []float64{1, 25, 50, 75, 100} {
		want := time.Duration(math.Ceil(p/100*256)) - 1
		if got := h.Percentile(p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
}

func TestHistogramEmptyAndSingle(t *testing.T) {
	var h Histogram
	if h.Percentile(50) != 0 || h.Max() != 0 || h.Mean() != 0 || h.Count() != 0 {
		t.Error("empty histogram reports values")
	}
	h.Record(12345678 * time.Nanosecond)
	for _, p := range []float64{1, 50, 99, 100} {
		if got := h.Percentile(p); got != 12345678 {
			t.Errorf("single value: p%v = %d", p, got)
		}
	}
	h.Record(-time.Second) // clock trouble: counts as zero
	if h.Min() != 0 {
		t.Errorf("min after a negative value = %v", h.Min())
	}
}

func TestBucketsCoverEveryValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []uint64{0, 1, 255, 256, 257, 511, 512, 1 << 40, math.MaxInt64}
	for range 10000 {
		values = append(values, rng.Uint64N(math.MaxInt64)>>rng.UintN(63))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("value %d: bucket %d out of range", v, i)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if v >= 256 && float64(hi-lo) > float64(lo)/128 {
			t.Fatalf("bucket %d = [%d, %d] wider than 1/128", i, lo, hi)
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, all Histogram
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		d := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{}) // empty: no effect
	for _, p := range []float64{50, 90, 99, 100} {
		if m.Percentile(p) != all.Percentile(p) {
			t.Errorf("p%v merged %v, direct %v", p, m.Percentile(p), all.Percentile(p))
		}
	}
	if m.Count() != all.Count() || m.Min() != all.Min() || m.Max() != all.Max() {
		t.Errorf("merged count/min/max = %d/%v/%v, want %d/%v/%v", m.Count(), m.Min(), m.Max(), all.Count(), all.Min(), all.Max())
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0.9, 100, 1.1}, 1.1}, // one wild round does not move it
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input")
			}
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

// A list round with errors has no CPU per item; the median is of the
// rounds that have one, not pulled to 0 by the others.
func TestMedianFigures_CPUPerItemOfCleanRounds(t *testing.T) {
	rs := []*Result{
		{OK: 10, CPUMicrosPerItem: 2},
		{OK: 9, Errors: 1}, // a failed walk: no per-item figure
		{OK: 10, CPUMicrosPerItem: 4},
	}
	if got := medianFigures(rs).CPUMicrosPerItem; got != 3 {
		t.Errorf("CPU per item = %v, want 3 (the median of the clean rounds)", got)
	}
	if got := medianFigures(rs[1:2]).CPUMicrosPerItem; got != 0 {
		t.Errorf("CPU per item with no clean round = %v, want 0 (unknown)", got)
	}
}

// A list run's CPU per item: none past 1% of failed walks; below, the
// failed walks' CPU is spread over the items of the others.
func TestCPUPerItem(t *testing.T) {
	run := func(ok, errs int64) *Result {
		return &Result{Requests: ok + errs, OK: ok, Errors: errs,
			Ops: map[string]*OpResult{WorkloadList: {OK: ok, ToolsPerRequest: 10}}}
	}
	for _, c := range []struct {
		ok, errs int64
		want     float64
	}{
		{100, 0, 1},           // 1,000 µs over 1,000 items
		{99, 1, 1000.0 / 990}, // 1% failed: counted
		{98, 2, 0},            // 2%: none
		{0, 0, 0},
	} {
		if got := cpuPerItem(1000, run(c.ok, c.errs)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%d ok, %d failed: %v µs per item, want %v", c.ok, c.errs, got, c.want)
		}
	}
	if got := cpuPerItem(1000, &Result{Requests: 1, OK: 1}); got != 0 {
		t.Errorf("a call run has %v µs per item, want none", got)
	}
}
