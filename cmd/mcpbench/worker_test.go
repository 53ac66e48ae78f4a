package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunCall(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			ts := startServer(t, k.opts)
			var progress bytes.Buffer
			res, err := Run(t.Context(), Config{
				URL: ts.URL, Concurrency: 4, Requests: 200, Warmup: 50 * time.Millisecond,
				Progress: &progress, Label: "t",
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != 200 || res.Errors != 0 || res.Requests != 200 {
				t.Fatalf("ok %d, errors %d %v", res.OK, res.Errors, res.ErrorSamples)
			}
			l := res.LatencyMs
			if res.RPS <= 0 || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max || l.Min > l.P50 {
				t.Errorf("implausible figures: %.1f req/s, %+v", res.RPS, l)
			}
			if res.Ops["call"] == nil || res.Ops["call"].OK != 200 || res.Tool != "echo" {
				t.Errorf("ops = %+v", res.Ops)
			}
			if n := ts.sessions(); n != 0 {
				t.Errorf("%d sessions left open after the run", n)
			}
		})
	}
}

func TestRunListWalksEveryPage(t *testing.T) {
	for _, k := range serverKinds[:3] {
		t.Run(k.name, func(t *testing.T) {
			// echo, fail and 5 more: 7 tools, 2 a page: 4 pages a walk.
			o := k.opts
			o.pageSize, o.extraTools = 2, 5
			ts := startServer(t, o)
			res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 3, Requests: 30, Workload: WorkloadList})
			if err != nil {
				t.Fatal(err)
			}
			list := res.Ops["list"]
			if res.OK != 30 || res.Errors != 0 || list == nil {
				t.Fatalf("ok %d, errors %d %v", res.OK, res.Errors, res.ErrorSamples)
			}
			if list.PagesPerRequest != 4 || list.ToolsPerRequest != 7 {
				t.Errorf("%.2f pages and %.2f tools per walk, want 4 and 7", list.PagesPerRequest, list.ToolsPerRequest)
			}
			// A page of two tools and a cursor: bigger than "{}", smaller
			// than the whole list.
			if list.MaxPageBytes < 40 || list.MaxPageBytes > 2000 {
				t.Errorf("largest page %d bytes", list.MaxPageBytes)
			}
		})
	}
}

// -pages 1 ends every walk after its first page; the CPU of the process
// sampled (the test itself, which serves the list) is reported per item.
func TestRunListFirstPage(t *testing.T) {
	o := serverOpts{pageSize: 2, extraTools: 5}
	ts := startServer(t, o)
	res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 2, Requests: 200, Workload: WorkloadList,
		MaxPages: 1, CPUPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	list := res.Ops["list"]
	if res.OK != 200 || list == nil || list.PagesPerRequest != 1 || list.ToolsPerRequest != 2 {
		t.Fatalf("ok %d, list %+v, errors %v", res.OK, list, res.ErrorSamples)
	}
	// CPU is counted in ticks of 10 ms: 200 first pages may take less.
	if res.CPUMicrosPerItem != 0 && res.CPUMicrosPerItem*2 != res.CPUMicrosPerRequest {
		t.Errorf("CPU %.1f µs per request but %.1f per item, 2 items a request", res.CPUMicrosPerRequest, res.CPUMicrosPerItem)
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Workload: WorkloadList, MaxPages: -1}); err == nil {
		t.Error("MaxPages -1 accepted")
	}
}

// -proto 2026-07-28: no session, so the server sees one untimed
// server/discover per worker and then the measured requests, nothing else
// (no initialize, no notifications/initialized, no DELETE).
func TestRunModern(t *testing.T) {
	for _, k := range serverKinds[2:] {
		t.Run(k.name, func(t *testing.T) {
			o := k.opts
			o.pageSize, o.extraTools = 2, 5
			ts := startServer(t, o)
			res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 4, Requests: 200, Warmup: 0, Proto: ModernProto})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != 200 || res.Errors != 0 || res.Protocol != ModernProto {
				t.Fatalf("ok %d, errors %d %v, protocol %q", res.OK, res.Errors, res.ErrorSamples, res.Protocol)
			}
			if want := map[string]int64{"POST server/discover": 4, "POST tools/call": 200}; !maps.Equal(ts.requests(), want) {
				t.Errorf("requests %v, want %v", ts.requests(), want)
			}
			if h := *ts.lastHeader.Load(); h.Get("Mcp-Name") != "echo" || h.Get("Mcp-Session-Id") != "" {
				t.Errorf("headers %v", h)
			}

			// A walk of every page: the cursor params get _meta too.
			res, err = Run(t.Context(), Config{URL: ts.URL, Concurrency: 2, Requests: 10, Warmup: 0, Workload: WorkloadList, Proto: ModernProto})
			if err != nil {
				t.Fatal(err)
			}
			if list := res.Ops["list"]; res.OK != 10 || list == nil || list.PagesPerRequest != 4 || list.ToolsPerRequest != 7 {
				t.Fatalf("ok %d, errors %v, list %+v", res.OK, res.ErrorSamples, list)
			}
			var out bytes.Buffer
			res.WriteText(&out)
			if !strings.Contains(out.String(), "protocol 2026-07-28") {
				t.Errorf("report does not name the protocol:\n%s", out.String())
			}
		})
	}
}

// A modern run against a server that does not speak 2026-07-28 does not
// start, and says why.
func TestRunModernRefused(t *testing.T) {
	ts := startServer(t, serverOpts{})
	_, err := Run(t.Context(), Config{URL: ts.URL, Requests: 5, Proto: ModernProto})
	if err == nil || !strings.Contains(err.Error(), "server/discover") || !strings.Contains(err.Error(), ts.URL) {
		t.Errorf("err = %v", err)
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Requests: 5, Proto: ModernProto, Workload: WorkloadInit}); err == nil {
		t.Error("workload init accepted with protocol 2026-07-28")
	}
}

func TestRunMix(t *testing.T) {
	ts := startServer(t, serverOpts{pageSize: 2, extraTools: 1})
	res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 4, Requests: 400, Workload: WorkloadMix, MixCall: 75})
	if err != nil {
		t.Fatal(err)
	}
	call, list := res.Ops["call"], res.Ops["list"]
	if res.OK != 400 || call == nil || list == nil || call.OK+list.OK != 400 {
		t.Fatalf("ops = %+v, errors %v", res.Ops, res.ErrorSamples)
	}
	if frac := float64(call.OK) / 400; frac < 0.6 || frac > 0.9 {
		t.Errorf("%.2f of the requests were calls, want about 0.75", frac)
	}
	if list.PagesPerRequest != 2 {
		t.Errorf("pages per walk = %v", list.PagesPerRequest)
	}
}

func TestRunDuration(t *testing.T) {
	ts := startServer(t, serverOpts{})
	start := time.Now()
	res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a 0.4s run took %v", took)
	}
	if res.DurationS != 0.3 || res.OK == 0 || res.Interrupted {
		t.Errorf("duration %vs, ok %d, interrupted %t", res.DurationS, res.OK, res.Interrupted)
	}
	if want := float64(res.OK) / 0.3; res.RPS < want*0.999 || res.RPS > want*1.001 {
		t.Errorf("rps %v, want %v", res.RPS, want)
	}
}

func TestRunCountsErrorsByKind(t *testing.T) {
	ts := startServer(t, serverOpts{})
	res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 2, Requests: 20, Tool: "fail", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.Errors != 20 || res.ErrorKinds[KindToolError] != 20 {
		t.Errorf("ok %d, errors %v", res.OK, res.ErrorKinds)
	}
	if !strings.Contains(res.ErrorSamples[KindToolError], "always fails") {
		t.Errorf("sample = %q", res.ErrorSamples[KindToolError])
	}
	var out bytes.Buffer
	res.WriteText(&out)
	if !strings.Contains(out.String(), "tool-error") {
		t.Errorf("report does not name the error kind:\n%s", out.String())
	}

	res, err = Run(t.Context(), Config{URL: ts.URL, Concurrency: 2, Requests: 10, Tool: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorKinds["jsonrpc -32602"] != 10 {
		t.Errorf("errors %v", res.ErrorKinds)
	}
}

func TestRunInitializeFailure(t *testing.T) {
	hs := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden: bad token", http.StatusForbidden)
	})
	ts := startHandler(t, hs)
	_, err := Run(t.Context(), Config{URL: ts, Requests: 1})
	if err == nil || !strings.Contains(err.Error(), "initialize: HTTP 403") || !strings.Contains(err.Error(), "bad token") || !strings.Contains(err.Error(), ts) {
		t.Errorf("err = %v", err)
	}
	if _, err := Run(t.Context(), Config{URL: "localhost:8080/mcp"}); err == nil || !strings.Contains(err.Error(), "bad URL") {
		t.Errorf("URL without scheme: %v", err)
	}
}

func TestRunInterrupted(t *testing.T) {
	ts := startServer(t, serverOpts{})
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{URL: ts.URL, Concurrency: 2, Duration: time.Minute, Warmup: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.OK == 0 || res.Errors != 0 || res.DurationS > 1 {
		t.Errorf("interrupted %t, ok %d, errors %v, %vs", res.Interrupted, res.OK, res.ErrorKinds, res.DurationS)
	}
	if n := ts.sessions(); n != 0 {
		t.Errorf("%d sessions left open after an interrupted run", n)
	}
}

func TestRunInitLeavesSessionsOpen(t *testing.T) {
	ts := startServer(t, serverOpts{})
	res, err := Run(t.Context(), Config{URL: ts.URL, Concurrency: 4, Requests: 25, Workload: WorkloadInit})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 25 {
		t.Fatalf("ok %d, errors %v", res.OK, res.ErrorSamples)
	}
	// Exactly the requested count: the idle-session measurement relies on it.
	if n := ts.sessions(); n != 25 {
		t.Errorf("%d sessions open, want 25", n)
	}
}

func TestRunSendsHeaders(t *testing.T) {
	ts := startServer(t, serverOpts{})
	var h headerFlag
	for _, s := range []string{"Authorization: Bearer abc", "X-Tenant:t1"} {
		if err := h.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Requests: 3, Headers: h.h}); err != nil {
		t.Fatal(err)
	}
	got := *ts.lastHeader.Load()
	if got.Get("Authorization") != "Bearer abc" || got.Get("X-Tenant") != "t1" {
		t.Errorf("headers = %v", got)
	}
}

func TestCompare_PairsRoundsAndReportsRatios(t *testing.T) {
	a := startServer(t, serverOpts{})
	b := startServer(t, serverOpts{})
	cmp, err := Compare(t.Context(), Config{URL: a.URL, Concurrency: 4, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond}, b.URL, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.A.Rounds) != 3 || len(cmp.B.Rounds) != 3 || len(cmp.Rounds) != 3 {
		t.Fatalf("rounds: A %d, B %d, pairs %d", len(cmp.A.Rounds), len(cmp.B.Rounds), len(cmp.Rounds))
	}
	m := cmp.Median
	t.Logf("throughput %.2f×, p50 added %.3fms, p99 added %.3fms", m.ThroughputRatio, m.P50AddedMs, m.P99AddedMs)
	// No bound on the ratio itself: speed is what the benchmark reports,
	// never a unit test's assertion (a loaded machine skews any pair). What
	// must hold is that the ratios are the sides' own figures, paired by
	// round.
	if m.ThroughputRatio <= 0 || m.P50Ratio <= 0 {
		t.Errorf("median ratios not computed: throughput %.2f×, p50 %.2f×", m.ThroughputRatio, m.P50Ratio)
	}
	for i, r := range cmp.Rounds {
		want := cmp.B.Rounds[i].RPS / cmp.A.Rounds[i].RPS
		if r.Round != i+1 || r.ThroughputRatio != want {
			t.Errorf("round %d: %+v, want ratio %v", i+1, r, want)
		}
	}
	if cmp.A.Median.RPS <= 0 || cmp.B.Median.P50Ms <= 0 {
		t.Errorf("medians A %+v, B %+v", cmp.A.Median, cmp.B.Median)
	}

	// The text report and the JSON have both sides and the ratios.
	var out bytes.Buffer
	cmp.WriteText(&out)
	for _, want := range []string{a.URL, b.URL, "median of 3 rounds", "throughput"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	path := filepath.Join(t.TempDir(), "cmp.json")
	if err := writeJSON(path, nil, cmp); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var back map[string]any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "rounds", "median"} {
		if back[k] == nil {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestCompareKnownRatios(t *testing.T) {
	a := &Result{OK: 1, RPS: 1000, LatencyMs: Latency{P50: 2, P99: 10}}
	b := &Result{OK: 1, RPS: 250, LatencyMs: Latency{P50: 5, P99: 30}}
	r := ratiosOf(a, b)
	if r.ThroughputRatio != 0.25 || r.P50AddedMs != 3 || r.P99AddedMs != 20 || r.P50Ratio != 2.5 || r.P99Ratio != 3 {
		t.Errorf("ratios = %+v", r)
	}
	m := medianRatios([]Ratios{{ThroughputRatio: 0.3}, {ThroughputRatio: 9}, {ThroughputRatio: 0.35}})
	if m.ThroughputRatio != 0.35 {
		t.Errorf("median throughput ratio = %v", m.ThroughputRatio)
	}
	if r := ratiosOf(&Result{}, b); r.ThroughputRatio != 0 || r.P50Ratio != 0 {
		t.Errorf("ratios over zero = %+v", r)
	}
}

func TestCompareBadSecondURL(t *testing.T) {
	a := startServer(t, serverOpts{})
	_, err := Compare(t.Context(), Config{URL: a.URL, Requests: 5}, "http://127.0.0.1:1/mcp", 2)
	if err == nil || !strings.HasPrefix(err.Error(), "B: ") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("err = %v", err)
	}
}

func startHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
