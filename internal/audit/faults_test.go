package audit

// The writer under faults of its output: a full disk (a real one: a
// small tmpfs, when the test may mount one), a file a crash left mid-line,
// a FIFO nobody reads, a reader that stalls while the gateway shuts down.

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// logged is a logger whose JSON lines the test reads back.
func logged() (*slog.Logger, *testsupport.SyncBuffer) {
	buf := &testsupport.SyncBuffer{}
	return slog.New(slog.NewJSONHandler(buf, nil)), buf
}

// count counts the log lines whose message contains msg.
func count(buf *testsupport.SyncBuffer, msg string) int {
	n := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		var m struct{ Msg string }
		if json.Unmarshal([]byte(l), &m) == nil && strings.Contains(m.Msg, msg) {
			n++
		}
	}
	return n
}

func event(i int) *Event {
	return &Event{Time: time.Now(), VHost: "demo", Method: "tools/call", Name: "gateway-one-echo",
		Outcome: OutcomeOK, Principal: strings.Repeat("p", i%7+40), DurationMS: float64(i)}
}

// mountTmpfs mounts a tmpfs of size bytes and returns its directory; the
// test is skipped where it may not mount one (not root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("a full disk needs a tmpfs this test may not mount: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
	return dir
}

// A full disk: every line is written whole or counted as dropped
// (write_failed), one log line says so (not one per line), and once space
// frees the file goes on with lines that parse: nothing torn, nothing
// glued to a fragment.
func TestWriter_FullDiskCountsLossAndKeepsJSONLines(t *testing.T) {
	dir := mountTmpfs(t, "32k")
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 26<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := logged()
	path := filepath.Join(dir, "audit.log")
	w, err := Open(path, 4096, log)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const first, second = 200, 20
	for i := range first {
		w.Write(event(i))
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	written := countLines(t, path)
	lost := w.DroppedFor(DropWriteFailed)
	if lost == 0 || written == 0 || uint64(written)+lost != first {
		t.Fatalf("%d lines written and %d counted lost of %d: every line must be one or the other", written, lost, first)
	}
	if n := count(logs, "writing to the audit output failed"); n != 1 {
		t.Fatalf("%d log lines about %d failed writes within seconds, want 1:\n%s", n, lost, logs)
	}
	if err := os.Remove(filler); err != nil { // space frees
		t.Fatal(err)
	}
	for i := range second {
		w.Write(event(i))
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := countLines(t, path); got != written+second {
		t.Fatalf("after space freed the file holds %d lines, want %d", got, written+second)
	}
	if n := count(logs, "takes lines again"); n != 1 {
		t.Fatalf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
	if w.Dropped() != lost {
		t.Fatalf("dropped %d in all, want only the %d failed writes", w.Dropped(), lost)
	}
}

// A file that ends mid-line (a crash, a failed cut) gets its next line on
// a line of its own: the fragment stands alone, every later line parses.
func TestWriter_AFileEndingMidLineGetsItsNextLineOnItsOwn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(`{"time":"2026-01-01T00:00:00.000Z","vh`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(event(1))
	w.Write(event(2))
	w.Close()
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], `"vh`) {
		t.Fatalf("file %q: want the fragment, then two lines", data)
	}
	for _, l := range lines[1:] {
		if !json.Valid([]byte(l)) {
			t.Fatalf("a line after the fragment does not parse: %q", l)
		}
	}
}

// mkfifo makes a FIFO in a temporary directory.
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// within fails the test unless f returns within d: what is tested here
// used to block for ever.
func within(t *testing.T, d time.Duration, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return 0
	}
}

// A FIFO nobody reads is an error at once, naming the FIFO, rather than a
// start-up blocked in open(2).
func TestWriter_AFIFOWithoutAReaderFailsFast(t *testing.T) {
	path := mkfifo(t)
	var err error
	within(t, 10*time.Second, "Open of a FIFO without a reader", func() { _, err = Open(path, 16, nil) })
	if err == nil || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v, want an error naming the FIFO without a reader", err)
	}
}

// A reader that stalls: Close waits CloseWait at most, then drops what is
// left and counts it (shutdown); every line is either read or counted.
func TestWriter_CloseWithAStalledReaderEndsWithinItsWait(t *testing.T) {
	path := mkfifo(t)
	reader, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	log, logs := logged()
	w, err := Open(path, 4096, log)
	if err != nil {
		t.Fatal(err)
	}
	w.closeWait = 500 * time.Millisecond
	const total = 2000 // some 300 KB: far more than a pipe holds
	for i := range total {
		w.Write(event(i))
	}
	took := within(t, 20*time.Second, "Close with a stalled reader", w.Close)
	if took < w.closeWait {
		t.Fatalf("Close returned after %v, before its wait of %v: nothing stalled?", took, w.closeWait)
	}
	shut := w.DroppedFor(DropShutdown)
	if shut == 0 || w.DroppedFor(DropBufferFull) != 0 {
		t.Fatalf("dropped at shutdown %d, buffer full %d: want the queued lines counted at shutdown only", shut, w.DroppedFor(DropBufferFull))
	}
	if count(logs, "took no line") != 1 {
		t.Fatalf("the abandoned lines were not logged:\n%s", logs)
	}
	// The reader wakes up: what it reads and what was counted are all.
	if err := syscall.SetNonblock(int(reader.Fd()), false); err != nil {
		t.Fatal(err)
	}
	read := 0
	sc := bufio.NewScanner(reader)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("a line read from the FIFO does not parse: %q", sc.Bytes())
		}
		read++
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if uint64(read)+w.Dropped() != total {
		t.Fatalf("%d lines read and %d dropped of %d", read, w.Dropped(), total)
	}
	w.Write(event(0)) // after Close: counted, not lost silently
	if w.DroppedFor(DropShutdown) != shut+1 {
		t.Fatal("a line after Close was not counted")
	}
}
