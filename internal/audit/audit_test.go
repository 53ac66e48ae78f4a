package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEvent_LineIsOneJSONObjectTimeFirst(t *testing.T) {
	code := int64(-32602)
	e := &Event{Time: time.Date(2026, 12, 4, 13, 5, 6, 789_000_000, time.FixedZone("x", 3600)), VHost: "demo", Method: "tools/call",
		Outcome: OutcomeError, Code: &code, DurationMS: 1.5}
	line := string(e.line())
	if !strings.HasPrefix(line, `{"time":"2026-12-04T12:05:06.789Z","vhost":"demo"`) || !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("line %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	if m["code"] != float64(-32602) || m["principal"] != nil {
		t.Fatalf("decoded %v", m)
	}
}

func TestArgumentsSHA256_Canonical(t *testing.T) {
	a := ArgumentsSHA256(json.RawMessage(`{"b": 1, "a": {"y": [1, 2.50], "x": "é<"}}`))
	b := ArgumentsSHA256(json.RawMessage(`{"a":{"x":"é<","y":[1,2.50]},"b":1}`))
	if a != b || len(a) != 64 {
		t.Fatalf("the same arguments written differently digest %s and %s", a, b)
	}
	if ArgumentsSHA256(nil) != ArgumentsSHA256(json.RawMessage(`{}`)) {
		t.Fatal("absent arguments do not digest as {}")
	}
	if ArgumentsSHA256(json.RawMessage(`{"a":1}`)) == ArgumentsSHA256(json.RawMessage(`{"a":2}`)) {
		t.Fatal("different arguments digest alike")
	}
}

// A full buffer drops and counts, never blocks; what was queued is
// written by Close; a rotated file is reopened.
func TestWriter_FullBufferDropsAndCountsAndReopenFollowsRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock() // the writer stalls: the buffer (1) fills
	for i := range 50 {
		w.Write(&Event{Time: time.Now(), VHost: "v", Outcome: OutcomeOK, Method: "m" + strings.Repeat("x", i%2)})
	}
	w.mu.Unlock()
	if d := w.Dropped(); d < 48 || d > 49 {
		t.Fatalf("dropped %d of 50 with a buffer of 1 and a stalled writer, want 48 or 49", d)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file %v %v, want mode 0600", fi, err)
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	w.Write(&Event{Time: time.Now(), VHost: "after", Outcome: OutcomeOK})
	w.Close()
	w.Write(&Event{Time: time.Now(), VHost: "closed", Outcome: OutcomeOK}) // dropped quietly, no panic
	if n := countLines(t, path); n != 1 {
		t.Fatalf("the reopened file holds %d lines, want the one written after the rotation", n)
	}
	if n := countLines(t, rotated) + 1; n < 2 {
		t.Fatalf("the rotated file lost its lines")
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s holds a line that is not JSON: %q", path, sc.Text())
		}
		n++
	}
	return n
}
