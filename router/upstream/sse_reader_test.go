package upstream

import (
	"errors"
	"io"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSSEReader_Events(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []sseEvent
		lastID string
		retry  time.Duration
	}{
		{
			name:   "named event with id",
			stream: "event: message\nid: 7\ndata: {\"a\":1}\n\n",
			want:   []sseEvent{{Name: "message", ID: "7", Data: []byte(`{"a":1}`)}},
			lastID: "7",
		},
		{
			name:   "multi-line data, default name, no space after colon",
			stream: "data:one\ndata: two\ndata\n\n",
			want:   []sseEvent{{Name: "message", Data: []byte("one\ntwo\n")}},
		},
		{
			name:   "CRLF, CR and comments",
			stream: ": keep-alive\r\ndata: a\r\n\r\n:ping\rdata: b\r\r",
			want:   []sseEvent{{Name: "message", Data: []byte("a")}, {Name: "message", Data: []byte("b")}},
		},
		{
			name:   "id is sticky, NUL id ignored, retry parsed, BOM stripped",
			stream: "\xEF\xBB\xBFid: s_1\nretry: 1500\ndata: x\n\nid: bad\x00\ndata: y\n\nretry: soon\n\n",
			want:   []sseEvent{{Name: "message", ID: "s_1", Data: []byte("x")}, {Name: "message", ID: "s_1", Data: []byte("y")}},
			lastID: "s_1",
			retry:  1500 * time.Millisecond,
		},
		{
			name:   "event without data is not dispatched; empty data is",
			stream: "event: ping\nid: p\n\nevent: prime\ndata: \n\n",
			want:   []sseEvent{{Name: "prime", ID: "p", Data: []byte{}}},
			lastID: "p",
		},
		{
			name:   "event cut off by EOF is discarded",
			stream: "data: complete\n\ndata: partial",
			want:   []sseEvent{{Name: "message", Data: []byte("complete")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, lastID, retry := readAllEvents(t, []byte(tt.stream), len(tt.stream)+1, 0)
			for i := range got {
				if got[i].Data == nil {
					got[i].Data = []byte{}
				}
			}
			for i := range tt.want {
				if tt.want[i].Data == nil {
					tt.want[i].Data = []byte{}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
			if lastID != tt.lastID {
				t.Errorf("LastEventID = %q, want %q", lastID, tt.lastID)
			}
			if retry != tt.retry {
				t.Errorf("Retry = %v, want %v", retry, tt.retry)
			}
		})
	}
}

func TestSSEReader_BoundsEventSize(t *testing.T) {
	for name, stream := range map[string]string{
		"one long line":    "data: " + strings.Repeat("x", 200) + "\n\n",
		"many short lines": strings.Repeat("data: "+strings.Repeat("x", 20)+"\n", 10) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newSSEReader(strings.NewReader(stream), 100, 0).Next()
			if !errors.Is(err, errEventTooLarge) {
				t.Errorf("err = %v, want errEventTooLarge", err)
			}
		})
	}
}

func TestResolveEndpoint_SameOriginOnly(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:9001/sse")
	tests := []struct {
		raw  string
		want string // "" = rejected
	}{
		{"/message?sessionid=abc", "http://127.0.0.1:9001/message?sessionid=abc"},
		{"?sessionid=abc", "http://127.0.0.1:9001/sse?sessionid=abc"},
		{"messages/?session_id=1", "http://127.0.0.1:9001/messages/?session_id=1"},
		{"http://127.0.0.1:9001/m", "http://127.0.0.1:9001/m"},
		{"http://evil.example/m", ""},
		{"https://127.0.0.1:9001/m", ""},
		{"http://127.0.0.1:9002/m", ""},
		{"//evil.example/m", ""},
		{"http://user@127.0.0.1:9001/m", ""},
	}
	for _, tt := range tests {
		u, err := resolveEndpoint(base, tt.raw)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%q: accepted as %s, want rejection", tt.raw, u)
		case tt.want != "" && (err != nil || u.String() != tt.want):
			t.Errorf("%q: got %v, %v; want %s", tt.raw, u, err, tt.want)
		}
	}
	def, _ := url.Parse("https://mcp.example/sse")
	if _, err := resolveEndpoint(def, "https://MCP.example:443/m"); err != nil {
		t.Errorf("explicit default port rejected: %v", err)
	}
}

// chunkReader hands out its bytes n at a time, as a socket does.
type chunkReader struct {
	b []byte
	n int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// BenchmarkSSEReader_ListPage reads one event of a 155 kB list page (200
// tools), as a go-sdk backend sends it, in 16 kB reads: with no size
// known (the line buffer grows from 4 KiB), and with the hint the client
// keeps from the previous page (eventSizes).
func BenchmarkSSEReader_ListPage(b *testing.B) {
	item := `{"name":"search_issues","title":"search issues","description":"Use this tool to search issues in the workspace the user is signed in to. Results are paginated.","inputSchema":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}`
	data := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Repeat(item+",", 600) + item + `]}}`
	body := []byte("event: message\nid: 1\ndata: " + data + "\n\n")
	forHints(b, len(data), func(b *testing.B, hint int) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			r := newSSEReader(&chunkReader{b: body, n: 16 << 10}, 0, hint)
			ev, err := r.Next()
			if err != nil || len(ev.Data) != len(data) {
				b.Fatal(err)
			}
		}
	})
}

// forHints runs bench for an event of size bytes twice: with no size
// known (hint 0), and with the hint the client keeps from the previous
// answer (eventSizes: the data line's length).
func forHints(b *testing.B, size int, bench func(b *testing.B, hint int)) {
	b.Run("unknown-size", func(b *testing.B) { bench(b, 0) })
	b.Run("size-hint", func(b *testing.B) { bench(b, size+len("data: ")) })
}

// BenchmarkSSEReader_CallAnswer reads a tool call's answer of a few
// hundred bytes, the event and the end of its stream, as a relayed call
// does: with no size known, and with the hint of the previous answer. The
// answer's buffer goes with it (take), so B/op is what each call leaves
// to the collector.
func BenchmarkSSEReader_CallAnswer(b *testing.B) {
	data := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("hi ", 60) + `"}]}}`
	body := []byte("event: message\nid: 1_0\ndata: " + data + "\n\n")
	forHints(b, len(data), func(b *testing.B, hint int) {
		b.ReportAllocs()
		for b.Loop() {
			r := newSSEReader(&chunkReader{b: body, n: 4096}, 0, hint)
			ev, err := r.Next()
			if err != nil || len(ev.Data) != len(data) {
				b.Fatal(err)
			}
			if _, err := r.Next(); err != io.EOF {
				b.Fatal(err)
			}
			r.Recycle()
		}
	})
}

// A hint sizes the first line buffer, within bounds, and is only a
// hint: a longer line than hinted is read whole, and the longest line is
// what the client notes for the next answer.
func TestSSEReader_SizeHint(t *testing.T) {
	for hint, want := range map[int]int{0: 4096, 100: minLineBuffer, 1000: 1189, 100000: 112564, 8 << 20: maxLineHint} {
		if got := lineBuffer(hint); got != want {
			t.Errorf("lineBuffer(%d) = %d, want %d", hint, got, want)
		}
	}
	// Lines longer than hinted, from below bufpool's sizes and from
	// within them, in reads of every size.
	for _, tc := range []struct{ hint, size int }{{10000, 50000}, {300, 3000}, {300, 300}} {
		data := strings.Repeat("x", tc.size)
		for _, n := range []int{1, 7, 512, 1 << 20} {
			r := newSSEReader(&chunkReader{b: []byte("id: 1\ndata: " + data + "\n\nid: 2\ndata: [2]\n\n"), n: n}, 0, tc.hint)
			ev, err := r.Next()
			if err != nil || string(ev.Data) != data {
				t.Fatalf("hint %d, reads of %d: event of %d bytes, %v", tc.hint, n, len(ev.Data), err)
			}
			if r.Longest() != len(data)+6 {
				t.Errorf("Longest %d, want %d", r.Longest(), len(data)+6)
			}
			if ev, err := r.Next(); err != nil || string(ev.Data) != "[2]" {
				t.Fatalf("hint %d, reads of %d: second event %q, %v", tc.hint, n, ev.Data, err)
			}
		}
	}
	var sizes eventSizes
	if sizes.hint("tools/list") != 0 {
		t.Fatal("a hint before any answer")
	}
	sizes.note("tools/list", 155000)
	sizes.note("tools/call", 300)
	sizes.note("tools/list", 154000)
	if sizes.hint("tools/list") != 154000 || sizes.hint("tools/call") != 300 {
		t.Errorf("hints %d, %d", sizes.hint("tools/list"), sizes.hint("tools/call"))
	}
}
