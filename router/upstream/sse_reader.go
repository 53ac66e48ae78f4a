package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// defaultMaxMessageBytes bounds one SSE event and one JSON body from a
// backend, so a misbehaving backend cannot make the gateway buffer without
// limit. It matches the go-sdk's DefaultMaxEventSize.
const defaultMaxMessageBytes = 16 << 20

// errEventTooLarge is returned when an event (or a line) exceeds the bound.
var errEventTooLarge = errors.New("SSE event exceeds size limit")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Name string // the event type; "message" when the stream gave none
	ID   string // the stream's last event id at dispatch time
	Data []byte // the data lines joined by "\n"; owned by the caller
}

// sseReader parses a text/event-stream body following the WHATWG
// event-stream rules the backends rely on: "event:", multi-line "data:",
// "id:" (sticky across events, ignored when it holds NUL), "retry:", comment
// lines, a single optional space after the colon, CRLF/LF/CR line ends and a
// leading BOM. We keep our own reader (the go-sdk's is internal) because the
// gateway needs the last event id and retry hint for stream resumption.
type sseReader struct {
	sc       *bufio.Scanner
	max      int
	started  bool
	lastID   string
	retry    time.Duration
	hasRetry bool
	longest  int // the longest line read
}

// newSSEReader reads events of at most maxEvent bytes (0: the default)
// from r. sizeHint is the length of the longest line expected (0: none
// known; see eventSizes): the line buffer starts at about that size.
func newSSEReader(r io.Reader, maxEvent, sizeHint int) *sseReader {
	if maxEvent <= 0 {
		maxEvent = defaultMaxMessageBytes
	}
	sc := bufio.NewScanner(r)
	// A line holds at most one field; allow the field name on top of the data.
	sc.Buffer(make([]byte, 0, lineBuffer(sizeHint)), maxEvent+64)
	sc.Split(splitSSELines)
	return &sseReader{sc: sc, max: maxEvent}
}

// lineBuffer is the size of a reader's first line buffer for lines of
// about hint bytes: bufio.Scanner grows its buffer by doubling from this
// and copies what it holds at every step, so a 155 kB list page read
// into the default 4 KiB took seven allocations and 300 kB of copies.
// Past maxLineHint it grows as before.
func lineBuffer(hint int) int {
	if hint <= 0 {
		return 4096
	}
	return min(max(hint+hint/8+64, 4096), maxLineHint)
}

// maxLineHint bounds the buffer a hint allocates up front: a backend
// that once sent a huge answer does not make every later read that large.
const maxLineHint = 1 << 20

// eventSizes remembers, per method, the longest line of a backend's
// latest answer on an event stream: the next answer to the same method
// (the next list page) is read into a buffer of about its size
// (newSSEReader's sizeHint). A Client keeps one.
type eventSizes struct{ m sync.Map } // method → *atomic.Int64

// hint is the size to expect for an answer to method (0: none seen).
func (e *eventSizes) hint(method string) int {
	if v, ok := e.m.Load(method); ok {
		return int(v.(*atomic.Int64).Load())
	}
	return 0
}

// note records the longest line of an answer to method.
func (e *eventSizes) note(method string, n int) {
	v, ok := e.m.Load(method)
	if !ok {
		v, _ = e.m.LoadOrStore(method, new(atomic.Int64))
	}
	v.(*atomic.Int64).Store(int64(n))
}

// Longest is the length of the longest line read so far.
func (r *sseReader) Longest() int { return r.longest }

// LastEventID is the id to resume from with Last-Event-ID ("" if none).
func (r *sseReader) LastEventID() string { return r.lastID }

// Retry is the server's reconnection hint, if it sent one.
func (r *sseReader) Retry() (time.Duration, bool) { return r.retry, r.hasRetry }

// Next returns the next event that carries a data field. It returns io.EOF
// at the end of the stream; an event cut off by EOF is discarded, as the
// event-stream rules require.
func (r *sseReader) Next() (sseEvent, error) {
	var (
		name    string
		data    []byte
		hasData bool
		size    int
	)
	for r.sc.Scan() {
		line := r.sc.Bytes()
		r.longest = max(r.longest, len(line))
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if !hasData {
				name = "" // an event without data is not dispatched
				continue
			}
			if name == "" {
				name = "message"
			}
			return sseEvent{Name: name, ID: r.lastID, Data: data}, nil
		}
		if line[0] == ':' {
			continue // comment, e.g. a keep-alive
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			size += len(value) + 1
			if size > r.max {
				return sseEvent{}, fmt.Errorf("%w (%d bytes)", errEventTooLarge, r.max)
			}
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...) // copies: the scanner reuses its buffer
			hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				r.retry, r.hasRetry = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseEvent{}, fmt.Errorf("%w (%d bytes)", errEventTooLarge, r.max)
		}
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// splitSSELines is a bufio.SplitFunc for event-stream lines, which may end
// in CRLF, LF or a lone CR.
//
// A line of a list page is hundreds of kilobytes, and the scanner calls
// the split on all of it each time it reads more: the line end is looked
// for with IndexByte (vectorised) rather than IndexAny (a byte loop).
func splitSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := lineEnd(data); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		switch {
		case i+1 < len(data) && data[i+1] == '\n':
			return i + 2, data[:i], nil
		case i+1 < len(data) || atEOF:
			return i + 1, data[:i], nil
		default:
			return 0, nil, nil // a CR at the buffer's end: wait to see if LF follows
		}
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// lineEnd is the index of the first CR or LF in data, -1 if none.
func lineEnd(data []byte) int {
	lf := bytes.IndexByte(data, '\n')
	head := data
	if lf >= 0 {
		head = data[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		return cr
	}
	return lf
}
