package handler

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgw/gateway/store"
)

// sseWriter writes Server-Sent Events and flushes each one through
// http.ResponseController, so events reach the client as they happen (on
// Lambda Function URLs with response streaming, too).
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	buf     bytes.Buffer
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// start writes the stream's headers once.
func (s *sseWriter) start(header func(http.Header)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(header)
}

func (s *sseWriter) startLocked(header func(http.Header)) {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // nginx and friends: do not buffer
	if header != nil {
		header(h)
	}
	s.w.WriteHeader(http.StatusOK)
	_ = s.rc.Flush()
}

// event writes one event: an optional id, optional retry, and data (one
// JSON-RPC message, which never holds a raw newline).
func (s *sseWriter) event(id store.EventID, retry time.Duration, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(nil)
	s.buf.Reset()
	if id != "" {
		s.buf.WriteString("id: ")
		s.buf.WriteString(string(id))
		s.buf.WriteByte('\n')
	}
	if retry > 0 {
		s.buf.WriteString("retry: ")
		s.buf.WriteString(strconv.FormatInt(retry.Milliseconds(), 10))
		s.buf.WriteByte('\n')
	}
	if data != nil {
		s.buf.WriteString("event: message\ndata: ")
		s.buf.Write(data)
		s.buf.WriteByte('\n')
	} else {
		s.buf.WriteString("data:\n")
	}
	s.buf.WriteByte('\n')
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	return s.flush()
}

// flush pushes buffered bytes to the client. A writer that cannot flush
// (http.ErrNotSupported) writes through already (Lambda's streaming
// response writer does), so that is not a broken stream.
func (s *sseWriter) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// comment writes a keep-alive comment line.
func (s *sseWriter) comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked(nil)
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.flush()
}
