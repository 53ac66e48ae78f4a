package audit

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Writer writes audit lines from a bounded buffer on a goroutine of its
// own, to stdout, stderr or a file it can reopen (for log rotation).
//
// What it promises (docs/reference/audit.md): best effort with counted
// loss. A request never waits for the output; every line is either
// written whole or counted as dropped, by reason (Drops), and failures
// are logged at most once per interval with how many lines they cost.
// The output stays valid JSON lines: a line the output took only part of
// is removed again (a regular file) or ended before the next one starts
// (a pipe). Opening the output never blocks (a FIFO nobody reads is an
// error at once), and Close waits for the output at most CloseWait.
type Writer struct {
	lines   chan item
	closing sync.RWMutex // held to read by Write, to write by Close
	closed  bool
	log     *slog.Logger
	losses  losses

	mu      sync.Mutex // guards what follows: Reopen against the writer
	out     io.Writer
	file    *os.File   // out when it is a path's
	retired []*os.File // files Reopen replaced, closed by the writer between lines
	torn    bool       // the output ends mid-line: the next line starts with a newline
	gen     int        // counts Reopens, so a write's outcome is kept for its own output only
	shut    bool       // Close closed the output
	path    string

	// closeWait bounds Close's wait for the output (CloseWait).
	closeWait time.Duration
	// abandoned: Close stopped waiting; what is left is dropped.
	abandoned atomic.Bool

	done      chan struct{}
	closeOnce sync.Once
}

// item is a line to write, or (done set) a flush: done is closed once
// every line queued before it is written.
type item struct {
	line []byte
	done chan struct{}
}

// CloseWait bounds how long Close waits for the output to take what is
// queued: past it the rest is dropped and counted (DropShutdown), so a
// stalled reader cannot hold a shutting-down gateway.
const CloseWait = 5 * time.Second

// Open starts a Writer for output ("stdout", "stderr" or a file path,
// appended to and created 0600) with room for buffer lines. Opening never
// blocks: a FIFO without a reader is an error.
func Open(output string, buffer int, log *slog.Logger) (*Writer, error) {
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{lines: make(chan item, max(buffer, 1)), log: log, done: make(chan struct{}), closeWait: CloseWait}
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
// counted (DropBufferFull), and a warning logged at most every
// lossLogEvery. After Close a line is dropped and counted (DropShutdown).
func (w *Writer) Write(e *Event) {
	line := e.line()
	if line == nil {
		return
	}
	w.closing.RLock()
	if w.closed {
		w.closing.RUnlock()
		w.drop(DropShutdown, nil) // a request that outlived the gateway's shutdown
		return
	}
	select {
	case w.lines <- item{line: line}:
		w.closing.RUnlock()
		return
	default:
	}
	w.closing.RUnlock()
	w.drop(DropBufferFull, nil)
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

func (w *Writer) run() {
	defer close(w.done)
	for it := range w.lines {
		switch {
		case it.done != nil:
			close(it.done)
		case w.abandoned.Load():
			w.drop(DropShutdown, nil)
		default:
			w.writeLine(it.line)
		}
	}
}

// Close writes what is queued, within CloseWait, stops the writer and
// closes the file. Past CloseWait it interrupts a write in progress where
// the output allows it (a pipe or a FIFO: not a regular file, nor stdout)
// and drops and counts what is left; a writer stuck in a write that
// cannot be interrupted is left to end with the process. Later Writes are
// dropped and counted.
func (w *Writer) Close() {
	w.closeOnce.Do(func() {
		w.closing.Lock()
		w.closed = true
		close(w.lines)
		w.closing.Unlock()
		wait := time.NewTimer(w.closeWait)
		defer wait.Stop()
		select {
		case <-w.done:
		case <-wait.C:
			w.abandon()
		}
		w.mu.Lock()
		w.shut = true
		if w.file != nil {
			_ = w.file.Close()
		}
		for _, f := range w.retired {
			_ = f.Close()
		}
		w.retired = nil
		w.mu.Unlock()
		w.losses.summary(w.log)
	})
}

// abandon stops waiting for an output that takes nothing: a write in
// progress is interrupted where it can be, and what is still queued is
// dropped and counted, alongside the writer goroutine.
func (w *Writer) abandon() {
	w.abandoned.Store(true)
	w.mu.Lock()
	f := w.file
	w.mu.Unlock()
	if f != nil {
		_ = f.SetWriteDeadline(time.Now()) // os.ErrNoDeadline for a regular file: nothing to interrupt there
	}
	left := 0
	for it := range w.lines {
		if it.done != nil {
			close(it.done)
			continue
		}
		w.drop(DropShutdown, nil)
		left++
	}
	w.log.Error("audit output took no line for the shutdown wait: the lines left were dropped",
		"wait", w.closeWait.String(), "dropped", left)
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	select {
	case <-w.done:
	case <-grace.C:
		w.log.Warn("the audit writer is stuck in a write its output cannot interrupt; it ends with the process")
	}
}
