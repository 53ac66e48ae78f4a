package upstream

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// A stdio backend's stderr is its log. Each line becomes one gateway log
// record (info, with the vhost, backend and pid), bounded so that a process
// cannot flood or break the gateway's log: a line is cut at
// maxStderrLine bytes, and at most stderrBurst lines are logged at once,
// then stderrRate a second; the lines dropped are counted in the next
// record that gets through.
const (
	maxStderrLine = 1024
	stderrRate    = 20
	stderrBurst   = 100
)

// logStderr logs r line by line until it ends.
func logStderr(r io.ReadCloser, log *slog.Logger) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	lim := rate.NewLimiter(stderrRate, stderrBurst)
	dropped := 0
	for {
		line, cut, err := readBoundedLine(br)
		if line != "" || cut {
			if !lim.AllowN(time.Now(), 1) {
				dropped++
			} else {
				attrs := []any{"line", line}
				if cut {
					attrs = append(attrs, "truncated", true)
				}
				if dropped > 0 {
					attrs = append(attrs, "dropped_lines", dropped)
					dropped = 0
				}
				log.Info("stdio backend stderr", attrs...)
			}
		}
		if err != nil {
			if dropped > 0 {
				log.Info("stdio backend stderr", "dropped_lines", dropped)
			}
			return
		}
	}
}

// readBoundedLine reads one line, keeping at most maxStderrLine bytes of
// it (cut reports that more was skipped); the text is valid UTF-8 without
// the line ending.
func readBoundedLine(br *bufio.Reader) (line string, cut bool, err error) {
	var b []byte
	total := 0
	for {
		chunk, err := br.ReadSlice('\n')
		total += len(chunk)
		if room := maxStderrLine - len(b); room > 0 {
			b = append(b, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			total-- // the newline
		}
		text := strings.TrimRight(string(b), "\r\n")
		return strings.ToValidUTF8(text, string(utf8.RuneError)), total > maxStderrLine, err
	}
}
