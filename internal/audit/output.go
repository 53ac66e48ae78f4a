package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// The output end of the writer: opening a path without ever blocking,
// reopening it after a rotation, and keeping the output valid JSON lines
// whatever a write does. A line is written whole or not at all: when the
// output took part of one (a full disk, a file size limit), a regular
// file is cut back to where the line began; where that cannot be done (a
// pipe, or the cut failed) the output is marked torn and the next line
// starts with a newline, so the fragment stands alone and every line
// after it parses.

// Reopen reopens the output file (after a log rotation moved it); a
// no-op for stdout and stderr. The file is opened without blocking: a
// FIFO nobody reads fails at once (start its reader first) rather than
// holding the gateway in open(2); the file held until now stays in use
// when reopening fails.
func (w *Writer) Reopen() error {
	if w.path == "" {
		return nil
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("audit output %s is a FIFO that nobody reads: start its reader before the gateway", w.path)
	}
	if err != nil {
		return fmt.Errorf("audit output: %w", err)
	}
	torn := endsMidLine(f)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shut { // Close has closed the output: nothing is written any more
		_ = f.Close()
		return nil
	}
	if w.file != nil {
		w.retired = append(w.retired, w.file) // closed by the writer between lines
	}
	w.file, w.out, w.torn = f, f, torn
	w.gen++
	return nil
}

// endsMidLine reports whether f is a regular file whose last byte is not
// a newline: a line was torn before (a crash, a failed cut), and the next
// one must start on a line of its own.
func endsMidLine(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false
	}
	var last [1]byte
	_, err = f.ReadAt(last[:], fi.Size()-1)
	return err != nil || last[0] != '\n'
}

// output is where the next line goes: the output, its file (nil for
// stdout and stderr), whether it ends mid-line, and its generation.
// Files Reopen replaced are closed here, between lines.
func (w *Writer) output() (io.Writer, *os.File, bool, int) {
	w.mu.Lock()
	out, f, torn, gen, retired := w.out, w.file, w.torn, w.gen, w.retired
	w.retired = nil
	w.mu.Unlock()
	for _, old := range retired {
		_ = old.Close()
	}
	return out, f, torn, gen
}

// setTorn records whether output gen now ends mid-line (unless Reopen
// replaced it meanwhile).
func (w *Writer) setTorn(gen int, torn bool) {
	w.mu.Lock()
	if w.gen == gen {
		w.torn = torn
	}
	w.mu.Unlock()
}

// writeLine writes one line, whole or not at all.
func (w *Writer) writeLine(line []byte) {
	out, f, torn, gen := w.output()
	buf := line
	if torn {
		buf = append([]byte{'\n'}, line...)
	}
	n, err := out.Write(buf)
	if err == nil {
		w.setTorn(gen, false)
		w.losses.recovered(w.log)
		return
	}
	if n > 0 && !cutBack(f, n) {
		w.setTorn(gen, buf[n-1] != '\n') // (cut back: the output is as it was)
	}
	reason := DropWriteFailed
	if w.abandoned.Load() {
		reason = DropShutdown
	}
	w.drop(reason, err)
}

// cutBack removes the last n bytes of f, a regular file the writer alone
// appends to, and reports whether it did.
func cutBack(f *os.File, n int) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(n) {
		return false
	}
	return f.Truncate(fi.Size()-int64(n)) == nil
}
