package testsupport

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// SSEEvent is one event of a gateway's event stream. A priming event has
// an id and no data; a keep-alive comment is an event with neither.
type SSEEvent struct {
	ID   string
	Data string
	// Msg is the JSON-RPC message in Data, decoded; nil for an event that
	// carries none.
	Msg map[string]any
}

// Method is the JSON-RPC method of the event's message ("" for a
// response, or an event without a message).
func (e SSEEvent) Method() string { s, _ := e.Msg["method"].(string); return s }

// streamWait bounds each wait of Next and NextRaw: one deadline for the
// event waited for, however many keep-alives arrive meanwhile.
const streamWait = 15 * time.Second

// SSEStream reads a live event stream (a GET stream, or a call answered as
// a stream) on a goroutine of its own, which ends when the stream does or
// the stream is closed (Close, or the test's end).
type SSEStream struct {
	t      testing.TB
	res    *http.Response
	events chan SSEEvent
	done   chan struct{}
	once   sync.Once
}

// ReadSSE starts reading res's body as an event stream.
func ReadSSE(t testing.TB, res *http.Response) *SSEStream {
	s := &SSEStream{t: t, res: res, events: make(chan SSEEvent, 64), done: make(chan struct{})}
	go func() {
		defer close(s.events)
		_ = readSSEEvents(res.Body, func(ev SSEEvent) bool {
			select {
			case s.events <- ev:
				return true
			case <-s.done:
				return false
			}
		})
	}()
	t.Cleanup(s.Close)
	return s
}

// Close ends the stream (closing the connection) and its reader.
func (s *SSEStream) Close() {
	s.once.Do(func() {
		close(s.done)
		s.res.Body.Close()
	})
}

// Next returns the next event that carries a message (priming events and
// keep-alives are skipped). It fails the test when the stream ends first
// or none comes within 15s.
func (s *SSEStream) Next() SSEEvent {
	s.t.Helper()
	ev, got, ended := s.next(streamWait, true)
	switch {
	case ended:
		s.t.Fatal("the stream ended")
	case !got:
		s.t.Fatalf("no message event within %v", streamWait)
	}
	return ev
}

// NextRaw returns the next event of any kind, the priming event and
// keep-alives included.
func (s *SSEStream) NextRaw() SSEEvent {
	s.t.Helper()
	ev, got, ended := s.next(streamWait, false)
	switch {
	case ended:
		s.t.Fatal("the stream ended")
	case !got:
		s.t.Fatalf("no event within %v", streamWait)
	}
	return ev
}

// NextWithin is Next for a caller that expects nothing may come: false
// when no message event comes within d, or the stream ends first.
func (s *SSEStream) NextWithin(d time.Duration) (SSEEvent, bool) {
	ev, got, _ := s.next(d, true)
	return ev, got
}

// next waits up to d for the next event (with a message, if messagesOnly);
// ended says the stream ended first.
func (s *SSEStream) next(d time.Duration, messagesOnly bool) (ev SSEEvent, got, ended bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return SSEEvent{}, false, true
			}
			if ev.Msg != nil || !messagesOnly {
				return ev, true, false
			}
		case <-deadline.C:
			return SSEEvent{}, false, false
		}
	}
}

// ExpectEnd fails the test unless the stream ends within d with no further
// message (keep-alives may still come).
func (s *SSEStream) ExpectEnd(d time.Duration) {
	s.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			if ev.Msg != nil {
				s.t.Fatalf("an event after the last one: %s", ev.Data)
			}
		case <-deadline.C:
			s.t.Fatalf("the stream did not end within %v", d)
		}
	}
}

// readSSEEvents parses an event stream, passing each event to emit until
// the stream ends or emit returns false. A blank line ends an event, data
// lines are joined, comments (keep-alives) make an event of their own with
// neither id nor data.
func readSSEEvents(r io.Reader, emit func(SSEEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var ev SSEEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Data != "" {
				_ = json.Unmarshal([]byte(ev.Data), &ev.Msg)
			}
			if !emit(ev) {
				return nil
			}
			ev = SSEEvent{}
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:"):
			ev.Data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	return sc.Err()
}
