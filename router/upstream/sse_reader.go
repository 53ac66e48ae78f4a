package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/bufpool"
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
//
// It reads into one buffer and, for an event of a single data line (every
// answer a backend sends), hands the caller that line where it lies in
// the buffer and starts a new buffer: the body is copied once, from the
// connection to the buffer, not a second time into the event. A list page
// is hundreds of kilobytes; a line scanner copying each line out of its
// own buffer cost a third of what the gateway allocated walking a list.
type sseReader struct {
	r        io.Reader
	max      int
	hint     int    // the size of a new buffer's longest expected line
	buf      []byte // buf[pos:end] is read and not yet consumed
	pos, end int
	scanned  int   // buf[pos:scanned] holds no line end
	eof      bool  // r has nothing more
	readErr  error // why, when it is not io.EOF
	started  bool
	lastID   string
	retry    time.Duration
	hasRetry bool
	longest  int // the longest line read
	// shift is what the last fill dropped from the buffer's start; moved
	// is minus what the last line call's fills dropped in all.
	shift, moved int
	// given is the buffer the last event's data lies in when take handed
	// it over in place (nil when the data is a copy): see Given.
	given []byte
}

// newSSEReader reads events of at most maxEvent bytes (0: the default)
// from r. sizeHint is the length of the longest line expected (0: none
// known; see eventSizes): the buffer starts at about that size.
func newSSEReader(r io.Reader, maxEvent, sizeHint int) *sseReader {
	if maxEvent <= 0 {
		maxEvent = defaultMaxMessageBytes
	}
	return &sseReader{r: r, max: maxEvent, hint: sizeHint}
}

// maxHeldAfterData bounds what an event may hold in the buffer after its
// single data line before that line is copied out of the buffer.
const maxHeldAfterData = 64 << 10

// lineBuffer is the size of a reader's first buffer for lines of about
// hint bytes: the buffer grows by doubling from this and copies what it
// holds at every step, so a 155 kB list page read into the default 4 KiB
// took seven allocations and 300 kB of copies. Past maxLineHint it grows
// as before.
//
// A small answer (a tool call's few hundred bytes) gets a buffer of about
// its own size, not bufpool's smallest (4 KiB): the buffer an answer lies
// in goes with it, and most callers leave it to the collector, so those
// 4 KiB were a relayed call's largest allocation (15% of its bytes).
func lineBuffer(hint int) int {
	if hint <= 0 {
		return 4096
	}
	return min(max(hint+hint/8+64, minLineBuffer), maxLineHint)
}

// minLineBuffer is the smallest buffer a hint asks for.
const minLineBuffer = 512

// newBuffer is a buffer of at least n bytes: lent by bufpool from its
// smallest size up, made below it (bufpool.Put drops such a buffer).
func newBuffer(n int) []byte {
	if n < 4096 {
		return make([]byte, n)
	}
	return bufpool.Get(n)
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
	r.given = nil
	var (
		name    string
		data    []byte // the data lines joined, once there are two
		lines   int    // data lines so far
		first   = -1   // while lines == 1 and it is not in data: where its value starts in buf
		firstTo int    // and ends
		size    int
	)
	for {
		if first >= 0 && r.pos-firstTo > maxHeldAfterData {
			// Lines after the data line (keep-alive comments, say) would
			// all be held with it: copy it out instead.
			data = append(make([]byte, 0, size), r.buf[first:firstTo]...)
			first = -1
		}
		keep := r.pos
		if first >= 0 {
			keep = first
		}
		from, to, err := r.line(keep)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return sseEvent{}, io.EOF
			}
			return sseEvent{}, err
		}
		if first >= 0 {
			first, firstTo = first+r.moved, firstTo+r.moved
		}
		line := r.buf[from:to]
		r.longest = max(r.longest, len(line))
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			switch {
			case lines == 0:
				name = "" // an event without data is not dispatched
				continue
			case first >= 0:
				data = r.take(first, firstTo)
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
			lines++
			if lines == 1 { // kept where it lies, until the event ends or a second line comes
				firstTo = to
				first = to - len(value)
				continue
			}
			if first >= 0 { // the second line: the first is copied out
				data = append(make([]byte, 0, size), r.buf[first:firstTo]...)
				first = -1
			}
			data = append(append(data, '\n'), value...)
		default:
			r.control(field, value)
		}
	}
}

// control takes an event's id and retry fields, which outlast the event.
func (r *sseReader) control(field, value []byte) {
	switch string(field) {
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

// take hands the caller buf[from:to], which the reader never writes
// again: what is left to read moves to a new buffer.
func (r *sseReader) take(from, to int) []byte {
	data := r.buf[from:to:to]
	rest := r.buf[r.pos:r.end]
	r.given = r.buf
	r.buf, r.pos, r.end, r.scanned = nil, 0, 0, 0
	if len(rest) > 0 {
		r.buf = newBuffer(max(lineBuffer(r.hint), 2*len(rest)))
		r.end = copy(r.buf, rest)
	}
	return data
}

// Given is the buffer the data of the event Next returned last lies in,
// handed over whole (nil when the data is a copy). The reader never uses
// it again; it came from bufpool, so whoever ends up owning the event
// may give it back there once nothing reads the data (upstream.Answer).
func (r *sseReader) Given() []byte { return r.given }

// Recycle gives the reader's own buffer back to bufpool: the reader must
// not be used again. Events already returned are not affected (their
// data is a copy, or lies in a buffer handed over with it).
func (r *sseReader) Recycle() {
	bufpool.Put(r.buf)
	r.buf, r.pos, r.end, r.scanned = nil, 0, 0, 0
}

// line returns the next line, without its end, as buf[from:to]. Bytes
// from keep on (keep <= pos) stay in the buffer; when the buffer had to
// move them, r.moved says by how much (add it to offsets into buf held
// across the call). At the end of the input it returns io.EOF, or the
// error reading stopped with.
func (r *sseReader) line(keep int) (from, to int, err error) {
	r.moved = 0
	for {
		if i := lineEnd(r.buf[r.scanned:r.end]); i >= 0 {
			at := r.scanned + i
			switch {
			case r.buf[at] == '\n':
				from, r.pos = r.pos, at+1
			case at+1 < r.end && r.buf[at+1] == '\n':
				from, r.pos = r.pos, at+2
			case at+1 < r.end || r.eof:
				from, r.pos = r.pos, at+1
			default: // a CR at the buffer's end: wait to see if LF follows
				r.scanned = at
				if err := r.fill(keep); err != nil {
					return 0, 0, err
				}
				keep -= r.shift
				continue
			}
			r.scanned = r.pos
			return from, at, nil
		}
		r.scanned = r.end
		if r.eof {
			if r.pos < r.end { // the last line, with no end
				from, r.pos = r.pos, r.end
				r.scanned = r.pos
				return from, r.end, nil
			}
			if r.readErr != nil {
				return 0, 0, r.readErr
			}
			return 0, 0, io.EOF
		}
		if err := r.fill(keep); err != nil {
			return 0, 0, err
		}
		keep -= r.shift
	}
}

// fill reads more into the buffer. A full buffer first drops the bytes
// before keep (r.shift says how many; r.moved adds them up for line's
// caller) and doubles when that would free less than half of it; a line
// may grow to that of the largest event (the field name on top of the
// data), no further.
func (r *sseReader) fill(keep int) error {
	r.shift = 0
	if r.end == len(r.buf) {
		if r.end-r.pos > r.max+64 {
			return fmt.Errorf("%w (%d bytes)", errEventTooLarge, r.max)
		}
		next := r.buf
		switch live := r.end - keep; {
		case len(r.buf) == 0:
			next = newBuffer(lineBuffer(r.hint))
		case live > len(r.buf)/2:
			next = newBuffer(2 * len(r.buf))
		}
		n := copy(next, r.buf[keep:r.end])
		if len(r.buf) > 0 && &next[0] != &r.buf[0] {
			bufpool.Put(r.buf) // the reader's alone: events' data is elsewhere
		}
		r.buf, r.shift = next, keep
		r.pos, r.end, r.scanned = r.pos-keep, n, r.scanned-keep
		r.moved -= keep
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		r.eof = true
	default:
		r.eof, r.readErr = true, err
	}
	return nil
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
