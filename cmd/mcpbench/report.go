package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is the outcome of one run against one URL. Latencies are those of
// successful requests (a fast failure would flatter the percentiles);
// failures are counted by kind.
type Result struct {
	URL           string               `json:"url"`
	Workload      string               `json:"workload"`
	Protocol      string               `json:"protocol"` // the version offered or, modern, carried
	Tool          string               `json:"tool,omitempty"`
	Concurrency   int                  `json:"concurrency"`
	Started       time.Time            `json:"started"`
	WarmupS       float64              `json:"warmup_s"`
	DurationS     float64              `json:"duration_s"` // the measured window
	Requests      int64                `json:"requests"`   // ok + errors
	OK            int64                `json:"ok"`
	Errors        int64                `json:"errors"`
	RPS           float64              `json:"rps"` // successful requests per second
	LatencyMs     Latency              `json:"latency_ms"`
	Ops           map[string]*OpResult `json:"ops,omitempty"` // per operation of the workload
	ErrorKinds    map[string]int64     `json:"error_kinds,omitempty"`
	ErrorSamples  map[string]string    `json:"error_samples,omitempty"` // the first message of each kind
	Reinitialized int64                `json:"reinitialized,omitempty"` // sessions re-opened after a 404
	// CPUMicrosPerRequest is the CPU (user + system) Config.CPUPID spent
	// per request of the measured window; 0 when not sampled.
	CPUMicrosPerRequest float64 `json:"cpu_us_per_request,omitempty"`
	// CPUMicrosPerItem is, for a list workload with at most 1% errors, the same
	// CPU per tool listed (pages of every measured walk).
	CPUMicrosPerItem float64 `json:"cpu_us_per_item,omitempty"`
	Interrupted      bool    `json:"interrupted,omitempty"`
	// CPUPID is the process whose CPU was sampled (Config.CPUPID).
	CPUPID int `json:"cpu_pid,omitempty"`
}

// Latency percentiles, in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
}

// OpResult is one operation of a workload (call or list in a mix).
type OpResult struct {
	OK        int64   `json:"ok"`
	RPS       float64 `json:"rps"`
	LatencyMs Latency `json:"latency_ms"`
	// For list: pages fetched and tools seen per walk.
	PagesPerRequest float64 `json:"pages_per_request,omitempty"`
	ToolsPerRequest float64 `json:"tools_per_request,omitempty"`
	// MaxPageBytes is the size of the largest page's result (the JSON-RPC
	// result member, as received), over every measured walk.
	MaxPageBytes int `json:"max_page_bytes,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func latencyOf(h *Histogram) Latency {
	return Latency{
		P50: ms(h.Percentile(50)), P90: ms(h.Percentile(90)), P99: ms(h.Percentile(99)),
		Max: ms(h.Max()), Mean: ms(h.Mean()), Min: ms(h.Min()),
	}
}

func (r *runner) result(workers []*worker, started, end time.Time, interrupted bool) *Result {
	cfg := r.cfg
	res := &Result{
		URL: cfg.URL, Workload: cfg.Workload, Protocol: cfg.Proto, Concurrency: cfg.Concurrency,
		Started: started, WarmupS: cfg.Warmup.Seconds(), Interrupted: interrupted,
		Ops: map[string]*OpResult{},
	}
	if cfg.Workload == WorkloadCall || cfg.Workload == WorkloadMix {
		res.Tool = cfg.Tool
	}
	window := end.Sub(r.measureFrom).Seconds()
	if window < 0 {
		window = 0 // stopped during the warm-up
	}
	res.DurationS = window
	rate := func(n int64) float64 {
		if window <= 0 {
			return 0
		}
		return float64(n) / window
	}

	var all Histogram
	for op := range numOps {
		var h Histogram
		var pages, items int64
		maxPage := 0
		for _, w := range workers {
			h.Merge(&w.ops[op].hist)
			pages += w.ops[op].pages
			items += w.ops[op].items
			maxPage = max(maxPage, w.ops[op].maxPage)
		}
		n := int64(h.Count())
		if n == 0 {
			continue
		}
		all.Merge(&h)
		o := &OpResult{OK: n, RPS: rate(n), LatencyMs: latencyOf(&h)}
		if op == opList {
			o.PagesPerRequest = float64(pages) / float64(n)
			o.ToolsPerRequest = float64(items) / float64(n)
			o.MaxPageBytes = maxPage
		}
		res.Ops[opNames[op]] = o
	}
	for _, w := range workers {
		for k, n := range w.errs {
			if res.ErrorKinds == nil {
				res.ErrorKinds, res.ErrorSamples = map[string]int64{}, map[string]string{}
			}
			res.ErrorKinds[k] += n
			res.Errors += n
			if _, ok := res.ErrorSamples[k]; !ok {
				res.ErrorSamples[k] = w.samples[k]
			}
		}
		res.Reinitialized += w.reinits
	}
	res.OK = int64(all.Count())
	res.Requests = res.OK + res.Errors
	res.RPS = rate(res.OK)
	res.LatencyMs = latencyOf(&all)
	return res
}

// fmtMs prints milliseconds with three significant digits or so.
func fmtMs(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0ms"
	case a < 1:
		return fmt.Sprintf("%.3fms", v)
	case a < 10:
		return fmt.Sprintf("%.2fms", v)
	case a < 100:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}

// fmtBytes prints a size in bytes, kB (1,000) or MB.
func fmtBytes(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2f MB", float64(n)/1e6)
}

func fmtAdded(v float64) string {
	if v >= 0 {
		return "+" + fmtMs(v)
	}
	return fmtMs(v)
}

func describe(r *Result) string {
	s := r.Workload
	if r.Tool != "" {
		s += " " + r.Tool
	}
	if IsModern(r.Protocol) {
		s += ", protocol " + r.Protocol
	}
	return s
}

// WriteText prints a run for people.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s  %s  c=%d  %.1fs measured after %gs warm-up", r.URL, describe(r), r.Concurrency, r.DurationS, r.WarmupS)
	if r.Interrupted {
		fmt.Fprint(w, "  (interrupted)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  requests  %d ok, %d errors  %.1f req/s\n", r.OK, r.Errors, r.RPS)
	if r.OK > 0 {
		l := r.LatencyMs
		fmt.Fprintf(w, "  latency   p50 %s  p90 %s  p99 %s  max %s  mean %s\n",
			fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max), fmtMs(l.Mean))
	}
	if len(r.Ops) > 1 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  op\tok\treq/s\tp50\tp90\tp99\tmax\t")
		for _, name := range slices.Sorted(maps.Keys(r.Ops)) {
			o := r.Ops[name]
			fmt.Fprintf(tw, "  %s\t%d\t%.1f\t%s\t%s\t%s\t%s\t\n", name, o.OK, o.RPS,
				fmtMs(o.LatencyMs.P50), fmtMs(o.LatencyMs.P90), fmtMs(o.LatencyMs.P99), fmtMs(o.LatencyMs.Max))
		}
		tw.Flush()
	}
	if o := r.Ops[WorkloadList]; o != nil {
		fmt.Fprintf(w, "  list      %.1f pages, %.1f tools per walk, largest page %s\n", o.PagesPerRequest, o.ToolsPerRequest, fmtBytes(o.MaxPageBytes))
	}
	if r.CPUMicrosPerRequest > 0 {
		fmt.Fprintf(w, "  cpu       %.0f µs per request", r.CPUMicrosPerRequest)
		if r.CPUMicrosPerItem > 0 {
			fmt.Fprintf(w, ", %.2f µs per listed item", r.CPUMicrosPerItem)
		}
		fmt.Fprintf(w, " (pid %d)\n", r.CPUPID)
	}
	writeErrors(w, r)
}

func writeErrors(w io.Writer, r *Result) {
	if r.Reinitialized > 0 {
		fmt.Fprintf(w, "  sessions  re-initialized %d times after a 404\n", r.Reinitialized)
	}
	for _, k := range slices.Sorted(maps.Keys(r.ErrorKinds)) {
		fmt.Fprintf(w, "  error     %-14s %6d  e.g. %s\n", k, r.ErrorKinds[k], r.ErrorSamples[k])
	}
}

// WriteText prints the rounds and the median ratios for people.
func (c *Comparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "A  %s\nB  %s\n", c.A.URL, c.B.URL)
	desc := c.Workload
	if len(c.A.Rounds) > 0 {
		desc = describe(c.A.Rounds[0])
	}
	fmt.Fprintf(w, "%s, c=%d, %d rounds A B A B ...", desc, c.Concurrency, c.Config.Rounds)
	if c.Interrupted {
		fmt.Fprint(w, " (interrupted)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tside\treq/s\tp50\tp90\tp99\tmax\terrors\t")
	for i := range max(len(c.A.Rounds), len(c.B.Rounds)) {
		for j, s := range []*Side{&c.A, &c.B} {
			if i >= len(s.Rounds) {
				continue
			}
			r := s.Rounds[i]
			l := r.LatencyMs
			fmt.Fprintf(tw, "%d\t%c\t%.1f\t%s\t%s\t%s\t%s\t%d\t\n", i+1, 'A'+j, r.RPS,
				fmtMs(l.P50), fmtMs(l.P90), fmtMs(l.P99), fmtMs(l.Max), r.Errors)
		}
	}
	tw.Flush()
	for j, s := range []*Side{&c.A, &c.B} {
		for _, r := range s.Rounds {
			if r.Errors > 0 || r.Reinitialized > 0 {
				fmt.Fprintf(w, "%c errors:\n", 'A'+j)
				writeErrors(w, r)
			}
		}
	}
	if len(c.Rounds) == 0 {
		fmt.Fprintln(w, "no complete round with successful requests on both sides: no ratio")
		return
	}
	m := c.Median
	fmt.Fprintf(w, "median of %d rounds, B vs A: throughput %.2f×  p50 added %s  p99 added %s  latency p50 %.2f×  p99 %.2f×\n",
		len(c.Rounds), m.ThroughputRatio, fmtAdded(m.P50AddedMs), fmtAdded(m.P99AddedMs), m.P50Ratio, m.P99Ratio)
	if m.CPURatio > 0 {
		fmt.Fprintf(w, "CPU per request of the middle process: A %.0f µs, B %.0f µs: B %.2f× A\n", c.A.Median.CPUMicros, c.B.Median.CPUMicros, m.CPURatio)
	}
}

// writeJSON writes v, indented, to path ("-": stdout).
func writeJSON(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// summaryRow is one scenario of `mcpbench summary`.
type summaryRow struct {
	Name string
	Cmp  *Comparison
}

// writeSummary prints comparisons as one Markdown table: the standard run
// of scripts/bench.sh. "direct" is side A and "gateway" side B.
func writeSummary(w io.Writer, rows []summaryRow) {
	var main, cpu, lists, searches []summaryRow
	for _, r := range rows {
		switch {
		case r.Cmp.A.Median.CPUMicrosPerItem > 0 && r.Cmp.B.Median.CPUMicrosPerItem == 0 && r.Cmp.Median.CPURatio > 0:
			searches = append(searches, r) // a list page (A) against a call (B)
		case r.Cmp.B.Median.CPUMicrosPerItem > 0:
			lists = append(lists, r)
		case r.Cmp.Median.CPURatio > 0:
			cpu = append(cpu, r)
		default:
			main = append(main, r)
		}
	}
	sep := false // a blank line between tables
	if len(main) > 0 {
		writeMainTable(w, main)
		sep = true
	}
	if len(cpu) > 0 {
		if sep {
			fmt.Fprintln(w)
		}
		writeCPUTable(w, cpu)
		sep = true
	}
	if len(lists) > 0 {
		if sep {
			fmt.Fprintln(w)
		}
		writeListScaleTable(w, lists)
		sep = true
	}
	if len(searches) > 0 {
		if sep {
			fmt.Fprintln(w)
		}
		writeSearchTable(w, searches)
	}
}

// writeSearchTable: a tools/list page (A) against a tools/call (B) on the
// same gateway, its CPU per request each (the search-* scenarios: a
// cached page of a vhost's whole list against a search of it).
func writeSearchTable(w io.Writer, rows []summaryRow) {
	fmt.Fprintln(w, "| scenario | tools in the page (A) | A: list page CPU | B: call CPU | B ÷ A | B p50 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		a, b := r.Cmp.A.Median, r.Cmp.B.Median
		fmt.Fprintf(w, "| %s | %.0f | %.0f µs | %.0f µs | %.2f× | %s |\n", r.Name, a.Tools, a.CPUMicros, b.CPUMicros, r.Cmp.Median.CPURatio, fmtMs(b.P50Ms))
	}
}

// writeMainTable: side A "direct", side B "gateway".
func writeMainTable(w io.Writer, rows []summaryRow) {
	fmt.Fprintln(w, "| scenario | direct req/s | gateway req/s | ratio | p50 added | p99 added | p50 × |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		c := r.Cmp
		if len(c.Rounds) == 0 {
			fmt.Fprintf(w, "| %s | %.0f | %.0f | — | — | — | — |\n", r.Name, c.A.Median.RPS, c.B.Median.RPS)
			continue
		}
		m := c.Median
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.2f× | %s | %s | %.2f× |\n", r.Name,
			c.A.Median.RPS, c.B.Median.RPS, m.ThroughputRatio, fmtAdded(m.P50AddedMs), fmtAdded(m.P99AddedMs), m.P50Ratio)
	}
}

// writeCPUTable: the cpu-* scenarios, the middle process's CPU per call,
// a bare proxy's (A) against the gateway's (B).
func writeCPUTable(w io.Writer, rows []summaryRow) {
	fmt.Fprintln(w, "| scenario | bare proxy CPU / call | gateway CPU / call | ratio |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
	for _, r := range rows {
		c := r.Cmp
		fmt.Fprintf(w, "| %s | %.0f µs | %.0f µs | %.2f× |\n", r.Name, c.A.Median.CPUMicros, c.B.Median.CPUMicros, c.Median.CPURatio)
	}
}

// writeListScaleTable: list walks over a small vhost (A) and a large one
// (B), both through the gateway, with the gateway's CPU per listed item
// (the list-scale scenarios). Each figure is A → B, medians over rounds.
func writeListScaleTable(w io.Writer, rows []summaryRow) {
	fmt.Fprintln(w, "| scenario | tools per walk | pages | largest page | walk p50 | p50 × | gateway CPU per item |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		a, b := r.Cmp.A.Median, r.Cmp.B.Median
		ratio := "—"
		if len(r.Cmp.Rounds) > 0 {
			ratio = fmt.Sprintf("%.2f×", r.Cmp.Median.P50Ratio)
		}
		fmt.Fprintf(w, "| %s | %.0f → %.0f | %.1f → %.1f | %s → %s | %s → %s | %s | %.2f → %.2f µs |\n", r.Name,
			a.Tools, b.Tools, a.Pages, b.Pages, fmtBytes(int(a.MaxPageBytes)), fmtBytes(int(b.MaxPageBytes)),
			fmtMs(a.P50Ms), fmtMs(b.P50Ms), ratio, a.CPUMicrosPerItem, b.CPUMicrosPerItem)
	}
}

// loadSummaryRows reads name=file.json arguments.
func loadSummaryRows(args []string) ([]summaryRow, error) {
	var rows []summaryRow
	for _, a := range args {
		name, path, ok := strings.Cut(a, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("summary: %q is not name=file.json", a)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("summary: %w", err)
		}
		var c Comparison
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("summary: %s: %w", path, err)
		}
		if c.A.URL == "" || c.B.URL == "" {
			return nil, fmt.Errorf("summary: %s is not a comparison (run with -compare)", path)
		}
		rows = append(rows, summaryRow{Name: name, Cmp: &c})
	}
	return rows, nil
}
