package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
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
}

func newSSEReader(r io.Reader, maxEvent int) *sseReader {
	if maxEvent <= 0 {
		maxEvent = defaultMaxMessageBytes
	}
	sc := bufio.NewScanner(r)
	// A line holds at most one field; allow the field name on top of the data.
	sc.Buffer(make([]byte, 0, 4096), maxEvent+64)
	sc.Split(splitSSELines)
	return &sseReader{sc: sc, max: maxEvent}
}

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
