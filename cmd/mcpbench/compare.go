package main

import (
	"context"
	"fmt"
	"math"
)

// Comparison is the outcome of alternating rounds against two URLs: A is
// the baseline (a backend, say) and B the candidate (the gateway in front
// of it). Each round's B figures are set against the A round just before
// it, and the medians of those per-round ratios are the headline: two
// neighbouring rounds see the same machine noise, and the median shrugs off
// one bad pair.
type Comparison struct {
	Workload    string       `json:"workload"`
	Concurrency int          `json:"concurrency"`
	A           Side         `json:"a"`
	B           Side         `json:"b"`
	Rounds      []Ratios     `json:"rounds"` // one per complete A/B pair
	Median      Ratios       `json:"median"` // median over Rounds of each figure
	Interrupted bool         `json:"interrupted,omitempty"`
	Config      compareInput `json:"config"`
}

type compareInput struct {
	Rounds    int     `json:"rounds"`
	DurationS float64 `json:"duration_s,omitempty"`
	Requests  int64   `json:"requests,omitempty"`
	WarmupS   float64 `json:"warmup_s"`
}

// Side is every round of one URL and the median of its figures.
type Side struct {
	URL    string    `json:"url"`
	Rounds []*Result `json:"rounds"`
	Median Figures   `json:"median"`
}

// Figures are the headline numbers of a run.
type Figures struct {
	RPS   float64 `json:"rps"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// CPUMicros is the middle process's CPU per request (-cpu-pid-a/-b).
	CPUMicros float64 `json:"cpu_us_per_request,omitempty"`
	// CPUMicrosPerItem is the same per listed tool (list workloads).
	CPUMicrosPerItem float64 `json:"cpu_us_per_item,omitempty"`
	// For list workloads: pages and tools per walk, and the bytes of the
	// largest page.
	Pages        float64 `json:"pages,omitempty"`
	Tools        float64 `json:"tools,omitempty"`
	MaxPageBytes float64 `json:"max_page_bytes,omitempty"`
}

// Ratios set B against A. A ratio whose denominator is zero is reported as 0.
type Ratios struct {
	Round           int     `json:"round,omitempty"`
	ThroughputRatio float64 `json:"throughput_ratio"` // B req/s ÷ A req/s
	P50AddedMs      float64 `json:"p50_added_ms"`     // B p50 − A p50
	P99AddedMs      float64 `json:"p99_added_ms"`     // B p99 − A p99
	P50Ratio        float64 `json:"p50_ratio"`        // B p50 ÷ A p50
	P99Ratio        float64 `json:"p99_ratio"`        // B p99 ÷ A p99
	// CPURatio is B's middle process's CPU per request ÷ A's (0: not
	// sampled): the gateway's cost against a bare proxy's.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
}

// Compare runs cfg against cfg.URL (A) and urlB (B) in alternating rounds,
// A B A B ..., each a full Run (own sessions, warm-up, measurement).
// Cancelling ctx stops it and returns what was measured, marked
// Interrupted; only complete pairs enter the ratios.
//
// cpuPIDs, when set, are the middle processes of A and B whose CPU per
// request each side samples (Config.CPUPID).
func Compare(ctx context.Context, cfg Config, urlB string, rounds int, cpuPIDs ...int) (*Comparison, error) {
	return CompareSides(ctx, cfg, nil, urlB, rounds, cpuPIDs...)
}

// CompareSides is Compare with B's config adjusted by sideB (nil: the
// same as A's but for the URL): two different requests compared, such as
// a cached tools/list page (A) against a tools/call of search_tools (B).
func CompareSides(ctx context.Context, cfg Config, sideB func(*Config), urlB string, rounds int, cpuPIDs ...int) (*Comparison, error) {
	if rounds <= 0 {
		rounds = 1
	}
	if err := checkURL(urlB); err != nil {
		return nil, err
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	cmp := &Comparison{
		Workload: cfg.Workload, Concurrency: cfg.Concurrency,
		A: Side{URL: cfg.URL}, B: Side{URL: urlB},
		Config: compareInput{Rounds: rounds, DurationS: cfg.Duration.Seconds(), Requests: cfg.Requests, WarmupS: cfg.Warmup.Seconds()},
	}
	for i := 1; i <= rounds && ctx.Err() == nil; i++ {
		var pair [2]*Result
		for j, side := range []*Side{&cmp.A, &cmp.B} {
			c := cfg
			c.URL = side.URL
			if j == 1 && sideB != nil {
				sideB(&c)
			}
			if j < len(cpuPIDs) {
				c.CPUPID = cpuPIDs[j]
			}
			c.Label = fmt.Sprintf("%c round %d/%d", 'A'+j, i, rounds)
			res, err := Run(ctx, c)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return nil, fmt.Errorf("%c: %w", 'A'+j, err)
			}
			side.Rounds = append(side.Rounds, res)
			pair[j] = res
			if ctx.Err() != nil {
				break
			}
		}
		if pair[0] != nil && pair[1] != nil && pair[0].OK > 0 && pair[1].OK > 0 {
			r := ratiosOf(pair[0], pair[1])
			r.Round = i
			cmp.Rounds = append(cmp.Rounds, r)
		}
	}
	cmp.Interrupted = ctx.Err() != nil
	cmp.A.Median = medianFigures(cmp.A.Rounds)
	cmp.B.Median = medianFigures(cmp.B.Rounds)
	cmp.Median = medianRatios(cmp.Rounds)
	return cmp, nil
}

func ratiosOf(a, b *Result) Ratios {
	return Ratios{
		ThroughputRatio: safeDiv(b.RPS, a.RPS),
		P50AddedMs:      b.LatencyMs.P50 - a.LatencyMs.P50,
		P99AddedMs:      b.LatencyMs.P99 - a.LatencyMs.P99,
		P50Ratio:        safeDiv(b.LatencyMs.P50, a.LatencyMs.P50),
		P99Ratio:        safeDiv(b.LatencyMs.P99, a.LatencyMs.P99),
		CPURatio:        safeDiv(b.CPUMicrosPerRequest, a.CPUMicrosPerRequest),
	}
}

func safeDiv(x, y float64) float64 {
	if y == 0 || math.IsNaN(x) || math.IsNaN(y) {
		return 0
	}
	return x / y
}

// pick applies median to one figure of each element, 0 for none.
func pick[T any](xs []T, f func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return median(v)
}

// measured keeps the rounds that have a figure: a list round with an
// error has no CPU per item (its failed walks' items are unknown), and
// counting it as 0 would pull the median down to nothing.
func measured(rs []*Result, has func(*Result) bool) []*Result {
	var out []*Result
	for _, r := range rs {
		if has(r) {
			out = append(out, r)
		}
	}
	return out
}

func medianFigures(rs []*Result) Figures {
	var ok []*Result
	for _, r := range rs {
		if r.OK > 0 {
			ok = append(ok, r)
		}
	}
	return Figures{
		RPS:       pick(ok, func(r *Result) float64 { return r.RPS }),
		P50Ms:     pick(ok, func(r *Result) float64 { return r.LatencyMs.P50 }),
		P99Ms:     pick(ok, func(r *Result) float64 { return r.LatencyMs.P99 }),
		CPUMicros: pick(ok, func(r *Result) float64 { return r.CPUMicrosPerRequest }),
		CPUMicrosPerItem: pick(measured(ok, func(r *Result) bool { return r.CPUMicrosPerItem > 0 }),
			func(r *Result) float64 { return r.CPUMicrosPerItem }),
		Pages:        pick(ok, func(r *Result) float64 { return listOf(r).PagesPerRequest }),
		Tools:        pick(ok, func(r *Result) float64 { return listOf(r).ToolsPerRequest }),
		MaxPageBytes: pick(ok, func(r *Result) float64 { return float64(listOf(r).MaxPageBytes) }),
	}
}

// listOf is a run's list operation, zero when it has none.
func listOf(r *Result) OpResult {
	if o := r.Ops[WorkloadList]; o != nil {
		return *o
	}
	return OpResult{}
}

func medianRatios(rs []Ratios) Ratios {
	return Ratios{
		ThroughputRatio: pick(rs, func(r Ratios) float64 { return r.ThroughputRatio }),
		P50AddedMs:      pick(rs, func(r Ratios) float64 { return r.P50AddedMs }),
		P99AddedMs:      pick(rs, func(r Ratios) float64 { return r.P99AddedMs }),
		P50Ratio:        pick(rs, func(r Ratios) float64 { return r.P50Ratio }),
		P99Ratio:        pick(rs, func(r Ratios) float64 { return r.P99Ratio }),
		CPURatio:        pick(rs, func(r Ratios) float64 { return r.CPURatio }),
	}
}
