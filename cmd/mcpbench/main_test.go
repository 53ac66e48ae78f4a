package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseArgs([]string{"-c", "4", "http://a/mcp", "-n", "100", "http://b/mcp", "-H", "Authorization: Bearer x", "-quiet"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.urlA != "http://a/mcp" || o.urlB != "http://b/mcp" || o.cfg.Concurrency != 4 || o.cfg.Requests != 100 {
		t.Errorf("parsed %+v", o)
	}
	if o.cfg.Duration != 0 {
		t.Errorf("-n alone: duration %v, want none", o.cfg.Duration)
	}
	if o.cfg.Headers.Get("Authorization") != "Bearer x" || o.cfg.Progress != nil {
		t.Errorf("headers %v, progress %v", o.cfg.Headers, o.cfg.Progress)
	}

	o, err = parseArgs([]string{"-url", "http://a/mcp", "-compare", "http://b/mcp", "-n", "5", "-d", "2s"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.urlB != "http://b/mcp" || o.cfg.Duration != 2*time.Second || o.cfg.Progress == nil {
		t.Errorf("parsed %+v", o)
	}

	o, err = parseArgs([]string{"-proto", "2026-07-28", "http://a/mcp"}, &stderr)
	if err != nil || o.cfg.Proto != ModernProto {
		t.Errorf("-proto 2026-07-28: %v, %+v", err, o)
	}

	for _, bad := range [][]string{
		{"-proto", "2026-07-28", "-workload", "init", "http://a"},
		{},
		{"ftp://x/mcp"},
		{"http://a", "http://b", "http://c"},
		{"-H", "no colon", "http://a"},
		{"-workload", "bogus", "http://a"},
		{"-args", "[1]", "http://a"},
		{"-mix", "120", "-workload", "mix", "http://a"},
		{"-c", "0", "http://a"},
		{"-d", "0", "http://a"},
		{"http://a", "not a url"},
	} {
		if _, err := parseArgs(bad, &stderr); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestMainRunAndSummary(t *testing.T) {
	a := startServer(t, serverOpts{})
	b := startServer(t, serverOpts{jsonResponse: true})
	dir := t.TempDir()
	cmpPath := filepath.Join(dir, "cmp.json")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-quiet", "-c", "2", "-n", "40", "-warmup", "0", "-rounds", "2", "-json", cmpPath, a.URL, b.URL}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "median of 2 rounds") {
		t.Errorf("stdout:\n%s", stdout.String())
	}

	stdout.Reset()
	code = run(t.Context(), []string{"summary", "call-x=" + cmpPath, "call-y=" + cmpPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("summary exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "| scenario | direct req/s | gateway req/s | ratio | p50 added | p99 added |") ||
		!strings.HasPrefix(lines[2], "| call-x | ") {
		t.Errorf("summary:\n%s", stdout.String())
	}

	// One run, JSON on stdout.
	stdout.Reset()
	code = run(t.Context(), []string{"-quiet", "-n", "10", "-warmup", "0", "-json", "-", a.URL}, &stdout, &stderr)
	var res Result
	if code != 0 || json.Unmarshal(stdout.Bytes(), &res) != nil || res.OK != 10 {
		t.Errorf("exit %d, stdout %s", code, stdout.String())
	}

	// A single run is not a comparison.
	single := filepath.Join(dir, "single.json")
	os.WriteFile(single, stdout.Bytes(), 0o644)
	if code := run(t.Context(), []string{"summary", "x=" + single}, &stdout, &stderr); code == 0 {
		t.Error("summary accepted a single run")
	}
}

func TestMainErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-quiet", "http://127.0.0.1:1/mcp"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "initialize") || !strings.Contains(stderr.String(), "refused") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(t.Context(), []string{"-bogus"}, &stdout, &stderr); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}

	// Interrupted: still reports, exit 130. The run is cancelled once it
	// is measuring (a few tools/calls served), not after a fixed time: a
	// deadline can expire before the sessions are open on a loaded
	// machine, and a run that never started exits 1.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ts := startServer(t, serverOpts{onCall: func(n int64) {
		if n == 3 {
			cancel()
		}
	}})
	stdout.Reset()
	code := run(ctx, []string{"-quiet", "-d", "1m", "-warmup", "0", ts.URL}, &stdout, &stderr)
	if code != 130 || !strings.Contains(stdout.String(), "interrupted") || !strings.Contains(stdout.String(), "req/s") {
		t.Errorf("exit %d, stdout:\n%s", code, stdout.String())
	}
}

// summary sets list comparisons with the gateway's CPU per item apart
// from the cpu-* rows (a bare proxy against the gateway), a list page
// against a call (search-*), and the rest.
func TestSummaryTables(t *testing.T) {
	side := func(f Figures) Side { return Side{URL: "http://x", Median: f} }
	rows := []summaryRow{
		{Name: "call-x", Cmp: &Comparison{A: side(Figures{RPS: 100}), B: side(Figures{RPS: 50}), Rounds: []Ratios{{ThroughputRatio: 0.5}}, Median: Ratios{ThroughputRatio: 0.5, P50Ratio: 2}}},
		{Name: "cpu-x", Cmp: &Comparison{A: side(Figures{CPUMicros: 100}), B: side(Figures{CPUMicros: 150}), Rounds: []Ratios{{CPURatio: 1.5}}, Median: Ratios{CPURatio: 1.5}}},
		{Name: "list-scale-x", Cmp: &Comparison{
			A:      side(Figures{P50Ms: 10, Tools: 203, Pages: 1, MaxPageBytes: 155200, CPUMicros: 3000, CPUMicrosPerItem: 14.8}),
			B:      side(Figures{P50Ms: 400, Tools: 10150, Pages: 11, MaxPageBytes: 769500, CPUMicros: 150000, CPUMicrosPerItem: 14.78}),
			Rounds: []Ratios{{P50Ratio: 40, CPURatio: 50}}, Median: Ratios{P50Ratio: 40, CPURatio: 50}}},
		{Name: "search-x", Cmp: &Comparison{
			A:      side(Figures{Tools: 406, CPUMicros: 560, CPUMicrosPerItem: 1.38}),
			B:      side(Figures{P50Ms: 0.5, CPUMicros: 390}),
			Rounds: []Ratios{{CPURatio: 0.7}}, Median: Ratios{CPURatio: 0.7}}},
	}
	var out bytes.Buffer
	writeSummary(&out, rows)
	got := out.String()
	for _, want := range []string{
		"| call-x | 100 | 50 | 0.50× |",
		"| cpu-x | 100 µs | 150 µs | 1.50× |",
		"| list-scale-x | 203 → 10150 | 1.0 → 11.0 | 155.2 kB → 769.5 kB | 10.0ms → 400ms | 40.00× | 14.80 → 14.78 µs |",
		"| search-x | 406 | 560 µs | 390 µs | 0.70× |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "| scenario |") != 4 || strings.Contains(got, "| list-scale-x | 0 |") {
		t.Errorf("want four tables, the list and search rows in their own:\n%s", got)
	}
}
