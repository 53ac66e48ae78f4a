package handler

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// gatedWriter is a ResponseWriter whose first Write waits for gate (and
// says so on entered): a client, or a store, slow at the wrong moment.
type gatedWriter struct {
	testsupport.SyncBuffer
	h       http.Header
	gate    chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (w *gatedWriter) Header() http.Header { return w.h }
func (w *gatedWriter) WriteHeader(int)     {}
func (w *gatedWriter) Write(b []byte) (int, error) {
	w.once.Do(func() {
		close(w.entered)
		<-w.gate
	})
	return w.SyncBuffer.Write(b)
}

// A call's answer is queued after the call has ended (streaming, then
// finish). A writer still writing the call's last event when the call
// ended must not take the end for its cue to stop: the answer would never
// be written, and the stream would end without it (seen once in CI: a
// stdio backend's progress, then the stream's end, and no answer).
func TestPostStream_AnswerAfterALateEventIsWritten(t *testing.T) {
	w := &gatedWriter{h: http.Header{}, gate: make(chan struct{}), entered: make(chan struct{})}
	p := &postStream{sw: newSSEWriter(w), uncounted: true}
	progress := &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progressToken":"t","progress":3}`)}
	if err := p.Send(progress); err != nil {
		t.Fatal(err)
	}
	<-w.entered // the writer is writing the progress event
	if !p.streaming() {
		t.Fatal("the answer is not an event stream after an event")
	}
	close(w.gate)
	// A writer that stopped at the call's end would be gone now: done
	// closes. Nothing must come of the wait.
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-time.After(200 * time.Millisecond):
	}
	p.finish([]byte(`{"jsonrpc":"2.0","id":1,"result":{"done":true}}`))
	got := w.String()
	if !strings.Contains(got, `"progress":3`) || !strings.Contains(got, `"result":{"done":true}`) {
		t.Fatalf("stream %q lacks the progress or the answer", got)
	}
	if err := p.Send(progress); err != errStreamClosed {
		t.Errorf("Send after the answer: %v, want errStreamClosed", err)
	}
}

// An answer that cannot be encoded still answers: -32603 for the call's
// id, never a stream that ends without one.
func TestEncodeAnswer_UnencodableAnswerIsAnError(t *testing.T) {
	broken := &jsonrpc.Response{Error: &jsonrpc.Error{Code: 1, Message: "x", Data: json.RawMessage(`{"broken"`)}}
	got := string(encodeAnswer(broken, json.RawMessage(`7`)))
	if !strings.Contains(got, `"id":7`) || !strings.Contains(got, `-32603`) {
		t.Fatalf("answer %s, want a -32603 error for id 7", got)
	}
}
