package upstream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// records is a slog handler that keeps every record's attributes.
type records struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]any{"msg": rec.Message}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	r.mu.Lock()
	r.recs = append(r.recs, m)
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func TestStderr_EachLineIsOneBoundedRecord(t *testing.T) {
	long := strings.Repeat("x", 3*maxStderrLine)
	in := "first\r\n" + long + "\n" + strings.Repeat("y", maxStderrLine) + "\nbad \xff utf8\nlast without newline"
	var h records
	logStderr(io.NopCloser(strings.NewReader(in)), slog.New(&h))
	want := []struct {
		line string
		cut  bool
	}{{"first", false}, {long[:maxStderrLine], true}, {strings.Repeat("y", maxStderrLine), false}, {"bad \uFFFD utf8", false}, {"last without newline", false}}
	if len(h.recs) != len(want) {
		t.Fatalf("%d records, want %d: %v", len(h.recs), len(want), h.recs)
	}
	for i, w := range want {
		got := h.recs[i]
		if got["line"] != w.line || (got["truncated"] == true) != w.cut {
			t.Errorf("record %d: line %.40q truncated %v, want %.40q %v", i, got["line"], got["truncated"], w.line, w.cut)
		}
	}
}

// A process that writes faster than the log should take loses lines, not
// the gateway's log: the burst is logged, the rest counted.
func TestStderr_FloodIsRateLimitedAndCounted(t *testing.T) {
	const n = 5000
	var in bytes.Buffer
	for range n {
		in.WriteString("spam\n")
	}
	var h records
	logStderr(io.NopCloser(&in), slog.New(&h))
	logged, dropped := 0, 0
	for _, r := range h.recs {
		if r["line"] == "spam" {
			logged++
		}
		if d, ok := r["dropped_lines"].(int64); ok {
			dropped += int(d)
		}
	}
	if logged > stderrBurst+stderrRate || logged < stderrBurst {
		t.Errorf("%d lines logged of %d, want about the burst (%d)", logged, n, stderrBurst)
	}
	if logged+dropped != n {
		t.Errorf("logged %d + dropped %d != %d written", logged, dropped, n)
	}
}
