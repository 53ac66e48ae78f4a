package tests

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one event read from a gateway stream.
type sseEvent struct {
	ID   string
	Data string
	msg  map[string]any
}

func (e sseEvent) method() string { s, _ := e.msg["method"].(string); return s }

// sseStream reads events from a response body on its own goroutine.
type sseStream struct {
	t      *testing.T
	res    *http.Response
	events chan sseEvent
}

func readSSE(t *testing.T, res *http.Response) *sseStream {
	s := &sseStream{t: t, res: res, events: make(chan sseEvent, 64)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Data != "" {
					_ = json.Unmarshal([]byte(ev.Data), &ev.msg)
				}
				s.events <- ev
				ev = sseEvent{}
			case strings.HasPrefix(line, "id:"):
				ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "data:"):
				ev.Data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	t.Cleanup(func() { res.Body.Close() })
	return s
}

// next returns the next event that carries a message (priming events and
// keep-alives are skipped).
//
// The 15s bound is one deadline, not one per event: keep-alive comments
// (every 15s on an idle stream) must not keep a missing event waited for.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("stream ended")
			}
			if ev.msg != nil {
				return ev
			}
		case <-deadline.C:
			s.t.Fatal("no event within 15s")
		}
	}
}

// nextRaw returns the next event of any kind (the priming event included).
func (s *sseStream) nextRaw() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("stream ended")
		}
		return ev
	case <-time.After(15 * time.Second):
		s.t.Fatal("no event within 15s")
	}
	return sseEvent{}
}

func (s *sseStream) close() { s.res.Body.Close() }

// open sends a request with the client's session and returns the raw response.
func (c *rawClient) open(method, base, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(method, mcpURL(base), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := e2eHTTP.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return res
}

// stream opens the session's GET stream on base.
func (c *rawClient) stream(base, lastEventID string) *sseStream {
	c.t.Helper()
	hdr := map[string]string{"Accept": "text/event-stream"}
	if lastEventID != "" {
		hdr["Last-Event-ID"] = lastEventID
	}
	res := c.open(http.MethodGet, base, "", hdr)
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET stream on %s: %d", base, res.StatusCode)
	}
	return readSSE(c.t, res)
}

// callStreaming posts a call and returns its SSE stream.
func (c *rawClient) callStreaming(base string, id int, method string, params any) *sseStream {
	c.t.Helper()
	p, _ := json.Marshal(params)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": json.RawMessage(p)})
	res := c.open(http.MethodPost, base, string(body), map[string]string{"Accept": "text/event-stream"})
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("POST %s: %d", method, res.StatusCode)
	}
	return readSSE(c.t, res)
}
