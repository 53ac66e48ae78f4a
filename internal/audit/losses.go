package audit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Lines the writer could not write are counted, by why (the metric an
// operator alerts on, mcpgw_audit_dropped_total{reason}), and logged at
// most once per lossLogEvery per reason, with how many were lost since the
// last such log line: a full disk costs a log line every ten seconds, not
// one per request.

// Why a line was dropped.
const (
	// DropBufferFull: the buffer was full (the output does not keep up).
	DropBufferFull = "buffer_full"
	// DropWriteFailed: the output refused the line, or took only part of
	// it (a full disk, a file size limit, a reader gone).
	DropWriteFailed = "write_failed"
	// DropShutdown: the gateway was shutting down and the output took
	// nothing within CloseWait, or the line came after Close.
	DropShutdown = "shutdown"
)

// DropReasons are the reasons a line is dropped, in a fixed order.
var DropReasons = []string{DropBufferFull, DropWriteFailed, DropShutdown}

// lossLogEvery bounds the log lines about dropped audit lines, per reason.
const lossLogEvery = 10 * time.Second

// losses counts and logs the writer's dropped lines.
type losses struct {
	counts [3]atomic.Uint64 // by DropReasons' index

	failing atomic.Bool // a write failed since the last success: the next success logs the recovery

	mu      sync.Mutex
	lastLog [3]time.Time
	unseen  [3]uint64 // dropped since the last log line of the reason
}

func reasonIndex(reason string) int {
	for i, r := range DropReasons {
		if r == reason {
			return i
		}
	}
	panic("audit: unknown drop reason " + reason)
}

// drop counts one line dropped for reason (err: the output's error, if
// any) and logs it unless the reason was logged within lossLogEvery.
func (w *Writer) drop(reason string, err error) {
	w.losses.drop(w.log, reason, err, time.Now())
}

func (l *losses) drop(log *slog.Logger, reason string, err error, now time.Time) {
	i := reasonIndex(reason)
	total := l.counts[i].Add(1)
	l.mu.Lock()
	l.unseen[i]++
	if reason == DropWriteFailed {
		l.failing.Store(true)
	}
	if !l.lastLog[i].IsZero() && now.Sub(l.lastLog[i]) < lossLogEvery {
		l.mu.Unlock()
		return
	}
	n := l.unseen[i]
	l.unseen[i], l.lastLog[i] = 0, now
	l.mu.Unlock()
	level, msg := slog.LevelError, "audit lines dropped"
	switch reason {
	case DropBufferFull:
		level, msg = slog.LevelWarn, "audit lines dropped: the audit output does not keep up"
	case DropWriteFailed:
		msg = "audit lines dropped: writing to the audit output failed"
	}
	attrs := []any{"reason", reason, "dropped", n, "dropped_total", total}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	log.Log(context.Background(), level, msg, attrs...)
}

// recovered notes a line written: after failures, one log line says so
// and how many lines the failures cost since they were last logged.
func (l *losses) recovered(log *slog.Logger) {
	if !l.failing.Load() { // the common case: no lock
		return
	}
	l.mu.Lock()
	if !l.failing.Swap(false) {
		l.mu.Unlock()
		return
	}
	i := reasonIndex(DropWriteFailed)
	n := l.unseen[i]
	l.unseen[i] = 0
	l.mu.Unlock()
	log.Warn("the audit output takes lines again", "dropped_since_last_report", n, "dropped_total", l.counts[i].Load())
}

// summary logs, once the writer is closed, the drops not logged yet.
func (l *losses) summary(log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, n := range l.unseen {
		if n > 0 {
			log.Error("audit lines dropped", "reason", DropReasons[i], "dropped", n, "dropped_total", l.counts[i].Load())
			l.unseen[i] = 0
		}
	}
}

// Dropped is how many lines were dropped, for any reason.
func (w *Writer) Dropped() uint64 {
	var n uint64
	for i := range w.losses.counts {
		n += w.losses.counts[i].Load()
	}
	return n
}

// DroppedFor is how many lines were dropped for reason (one of
// DropReasons).
func (w *Writer) DroppedFor(reason string) uint64 {
	return w.losses.counts[reasonIndex(reason)].Load()
}
