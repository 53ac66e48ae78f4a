package audit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Writer writes audit lines from a bounded buffer on a goroutine of its
// own, to stdout, stderr or a file it can reopen (for log rotation).
type Writer struct {
	lines   chan item
	closing sync.RWMutex // held to read by Write, to write by Close
	closed  bool
	log     *slog.Logger
	dropped atomic.Uint64
	lastLog atomic.Int64 // unix nanos of the last "dropped" log line

	mu   sync.Mutex // guards out and file: Reopen against the writer
	out  io.Writer
	file *os.File
	path string

	done      chan struct{}
	closeOnce sync.Once
}

// item is a line to write, or (done set) a flush: done is closed once
// every line queued before it is written.
type item struct {
	line []byte
	done chan struct{}
}

// dropLogEvery bounds the log lines about dropped audit lines.
const dropLogEvery = 10 * time.Second

// Open starts a Writer for output ("stdout", "stderr" or a file path,
// appended to and created 0600) with room for buffer lines.
func Open(output string, buffer int, log *slog.Logger) (*Writer, error) {
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{lines: make(chan item, max(buffer, 1)), log: log, done: make(chan struct{})}
	switch output {
	case "stdout":
		w.out = os.Stdout
	case "stderr":
		w.out = os.Stderr
	default:
		w.path = output
		if err := w.Reopen(); err != nil {
			return nil, err
		}
	}
	go w.run()
	return w, nil
}

// Write queues e's line; when the buffer is full the line is dropped and
// counted (Dropped), and a warning logged at most every 10s.
func (w *Writer) Write(e *Event) {
	line := e.line()
	if line == nil {
		return
	}
	w.closing.RLock()
	if w.closed {
		w.closing.RUnlock()
		return // a request that outlived the gateway's shutdown
	}
	select {
	case w.lines <- item{line: line}:
		w.closing.RUnlock()
		return
	default:
	}
	w.closing.RUnlock()
	n := w.dropped.Add(1)
	now := time.Now().UnixNano()
	if last := w.lastLog.Load(); now-last >= int64(dropLogEvery) && w.lastLog.CompareAndSwap(last, now) {
		w.log.Warn("audit lines dropped: the audit output does not keep up", "dropped_total", n)
	}
}

// Flush waits, within ctx, until every line queued so far is written: an
// AWS Lambda invocation flushes before it returns, since a frozen
// execution environment writes nothing and one never thawed again would
// lose what it held.
func (w *Writer) Flush(ctx context.Context) error {
	done := make(chan struct{})
	w.closing.RLock()
	if w.closed {
		w.closing.RUnlock()
		return nil
	}
	select {
	case w.lines <- item{done: done}:
		w.closing.RUnlock()
	case <-ctx.Done():
		w.closing.RUnlock()
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped is how many lines found the buffer full.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Reopen reopens the output file (after a log rotation moved it); a
// no-op for stdout and stderr.
func (w *Writer) Reopen() error {
	if w.path == "" {
		return nil
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit output: %w", err)
	}
	w.mu.Lock()
	old := w.file
	w.file, w.out = f, f
	w.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

func (w *Writer) run() {
	defer close(w.done)
	for it := range w.lines {
		if it.done != nil {
			close(it.done)
			continue
		}
		w.mu.Lock()
		_, err := w.out.Write(it.line)
		w.mu.Unlock()
		if err != nil {
			w.log.Error("writing an audit line failed", "error", err)
		}
	}
}

// Close writes what is queued, stops the writer and closes the file.
// Writes after Close are not allowed.
func (w *Writer) Close() {
	w.closeOnce.Do(func() {
		w.closing.Lock()
		w.closed = true
		close(w.lines)
		w.closing.Unlock()
		<-w.done
		w.mu.Lock()
		if w.file != nil {
			_ = w.file.Close()
		}
		w.mu.Unlock()
	})
}
