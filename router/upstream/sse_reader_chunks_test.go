package upstream

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/mcpgw/gateway/internal/bufpool"
)

// referenceEvents parses a whole event stream the plain way the rules
// read: split into lines, then fields. It is what sseReader, which reads
// a body piece by piece into a buffer it hands on, must agree with.
func referenceEvents(stream []byte) (events []sseEvent, lastID string, retry time.Duration) {
	stream = bytes.TrimPrefix(stream, []byte("\xEF\xBB\xBF"))
	var lines [][]byte
	for len(stream) > 0 {
		i := bytes.IndexAny(stream, "\r\n")
		if i < 0 {
			lines = append(lines, stream) // the last line, with no end
			break
		}
		lines = append(lines, stream[:i])
		if stream[i] == '\r' && i+1 < len(stream) && stream[i+1] == '\n' {
			i++
		}
		stream = stream[i+1:]
	}
	var (
		name    string
		data    []byte
		hasData bool
	)
	for _, line := range lines {
		if len(line) == 0 {
			if hasData {
				if name == "" {
					name = "message"
				}
				events = append(events, sseEvent{Name: name, ID: lastID, Data: data})
			}
			name, data, hasData = "", nil, false
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return events, lastID, retry
}

// readAllEvents reads stream n bytes at a time into a reader whose first
// buffer expects lines of hint bytes. Events are checked only at the end,
// so a reader that wrote into an event it had handed on is caught; and
// the reader's buffers are given back (Recycle) and whatever bufpool
// lends next is overwritten first, so a reader that gave back a buffer an
// event lies in is caught too.
func readAllEvents(t testing.TB, stream []byte, n, hint int) (events []sseEvent, lastID string, retry time.Duration) {
	r := newSSEReader(&chunkReader{b: stream, n: n}, 1<<20, hint)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if g := r.Given(); g != nil && !within(ev.Data, g) {
			t.Fatalf("Given is not the buffer the event's data lies in")
		}
		events = append(events, ev)
	}
	retry, _ = r.Retry()
	lastID = r.LastEventID()
	r.Recycle()
	for size := 4 << 10; size <= 64<<10; size *= 2 {
		b := bufpool.Get(size)
		for i := range b {
			b[i] = '#'
		}
		bufpool.Put(b)
	}
	return events, lastID, retry
}

// within reports whether data lies in buf's backing array.
func within(data, buf []byte) bool {
	if len(data) == 0 {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf[:cap(buf)])))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return p >= start && p+uintptr(len(data)) <= start+uintptr(cap(buf))
}

func sameEvents(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].ID != b[i].ID || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// Whatever sizes the body arrives in, and however small the buffer
// starts, the events are those of the stream read whole, and an event
// handed on stays as it was while later ones are read.
func TestSSEReader_ChunkedReadsAgree(t *testing.T) {
	long := strings.Repeat(`{"name":"t","description":"a tool"},`, 400)
	streams := map[string]string{
		"answers":            "event: message\nid: 1\ndata: " + long + "\n\nevent: message\nid: 2\ndata: {\"b\":2}\n\n",
		"notification first": "data: {\"method\":\"notifications/progress\"}\n\nid: 9\ndata: " + long + "\n\n",
		"CR ends":            "data: a\r\rdata: " + long + "\r\n\r\ndata: c\r",
		"data then fields":   "data: " + long + "\nid: x\nevent: e\n\n: after\n\n",
		"multi-line":         "data: " + long + "\ndata: two\ndata:\n\ndata: one\n\n",
		"cut off":            "data: whole\n\ndata: " + long,
		"BOM and retry":      "\xEF\xBB\xBFretry: 20\ndata: x\n\n",
	}
	for name, stream := range streams {
		want, wantID, wantRetry := referenceEvents([]byte(stream))
		for _, n := range []int{1, 2, 3, 7, 64, 4096, 1 << 20} {
			for _, hint := range []int{0, 100, len(long) + 6} {
				got, id, retry := readAllEvents(t, []byte(stream), n, hint)
				if !sameEvents(got, want) || id != wantID || retry != wantRetry {
					t.Fatalf("%s, reads of %d, hint %d: events %q (id %q, retry %v), want %q (id %q, retry %v)",
						name, n, hint, got, id, retry, want, wantID, wantRetry)
				}
			}
		}
	}
}

// An answer of one data line is the buffer it was read into: no copy.
func TestSSEReader_AnswerIsNotCopied(t *testing.T) {
	data := strings.Repeat("x", 100000)
	body := []byte("event: message\nid: 1\ndata: " + data + "\n\n")
	allocs := testing.AllocsPerRun(20, func() {
		r := newSSEReader(bytes.NewReader(body), 0, len(data)+6)
		if ev, err := r.Next(); err != nil || len(ev.Data) != len(data) {
			t.Fatal(err)
		}
	})
	// The reader, its buffer, and the event's id: the data is the buffer.
	if allocs > 3 {
		t.Errorf("%v allocations reading one answer, want at most 3", allocs)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: message\nid: 1\ndata: {\"a\":1}\n\n"), 3, 0)
	f.Add([]byte("data:one\r\ndata: two\r\rdata\n\n: c\nid: \x00\nretry: 7\n\ndata: cut"), 1, 5)
	f.Add([]byte("\xEF\xBB\xBFdata: x\r"), 2, 0)
	f.Fuzz(func(t *testing.T, stream []byte, n, hint int) {
		if len(stream) > 1<<16 {
			return
		}
		n = 1 + int(uint(n)%300)
		hint = int(uint(hint) % 5000)
		want, wantID, wantRetry := referenceEvents(stream)
		got, id, retry := readAllEvents(t, stream, n, hint)
		if !sameEvents(got, want) || id != wantID || retry != wantRetry {
			t.Fatalf("reads of %d, hint %d: events %q (id %q, retry %v), want %q (id %q, retry %v)",
				n, hint, got, id, retry, want, wantID, wantRetry)
		}
	})
}

// Lines after an event's data line (keep-alives while a backend still
// works, say) are not all held in the buffer with it: past
// maxHeldAfterData the line is copied out and the buffer moves on.
func TestSSEReader_LinesAfterDataAreNotHeld(t *testing.T) {
	data := strings.Repeat("d", 1000)
	stream := "data: " + data + "\n" + strings.Repeat(": keep-alive\n", 200000) + "id: 5\n\ndata: next\n\n"
	body := []byte(stream)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := newSSEReader(&chunkReader{b: body, n: 4096}, 0, 0)
	ev, err := r.Next()
	runtime.ReadMemStats(&after)
	if err != nil || string(ev.Data) != data || ev.ID != "5" {
		t.Fatalf("event %q (id %q), %v", ev.Data, ev.ID, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("reading one event of a %d-byte stream allocated %d bytes", len(stream), grew)
	}
	if ev, err := r.Next(); err != nil || string(ev.Data) != "next" {
		t.Fatalf("second event %q, %v", ev.Data, err)
	}
}
