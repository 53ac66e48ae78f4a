package upstream

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testKey = "gateway-one"

// failsafe bounds waits on channels so a broken test fails instead of
// hanging; no test relies on it elapsing.
const failsafe = 10 * time.Second

// backend is a real go-sdk MCP server with tools that exercise the
// client: echo, fail, progress, sample, block, poll and rich.
type backend struct {
	server    *mcp.Server
	started   chan struct{} // block: the tool is running
	cancelled chan string   // block: the tool saw its context end (with the cause)
	echoes    atomic.Int32  // echo: times it ran
	fails     atomic.Int32  // fail: times it ran
}

var emptyObject = map[string]any{"type": "object"}

func newBackend() *backend {
	b := &backend{
		server:    mcp.NewServer(&mcp.Implementation{Name: "test-backend", Version: "1.0.0"}, nil),
		started:   make(chan struct{}, 4),
		cancelled: make(chan string, 4),
	}
	b.server.AddTool(&mcp.Tool{Name: "echo", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b.echoes.Add(1)
			seen, _ := json.Marshal(map[string]any{"args": json.RawMessage(req.Params.Arguments)})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(seen)}}}, nil
		})
	// fail's error is a plain Go error: the go-sdk answers it with a
	// JSON-RPC error of code 0, as it answers a request a stateful server
	// refuses for want of a session.
	b.server.AddTool(&mcp.Tool{Name: "fail", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b.fails.Add(1)
			return nil, errors.New("the tool failed")
		})
	b.server.AddTool(&mcp.Tool{Name: "progress", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 3; i++ {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i),
				})
				if err != nil {
					return nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	b.server.AddTool(&mcp.Tool{Name: "sample", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
			})
			text := ""
			if err != nil {
				text = "sampling error: " + err.Error()
			} else if tc, ok := res.Content.(*mcp.TextContent); ok {
				text = "sampled: " + tc.Text
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	b.server.AddTool(&mcp.Tool{Name: "block", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b.started <- struct{}{}
			<-ctx.Done()
			b.cancelled <- fmt.Sprint(context.Cause(ctx))
			return nil, ctx.Err()
		})
	b.server.AddTool(&mcp.Tool{Name: "poll", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// SEP-1699: end the call's stream early; the client must resume it
			// with GET + Last-Event-ID to see the rest.
			tok := req.Params.GetProgressToken()
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1})
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "polled"}}}, nil
		})
	b.server.AddTool(&mcp.Tool{Name: "rich", InputSchema: emptyObject},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Meta:    mcp.Meta{"x-vendor/trace": map[string]any{"id": "t-1", "weights": []any{1, 2.5, -0.125}}},
				Content: []mcp.Content{&mcp.TextContent{Text: "<b>é & ü</b> \u2028"}},
				StructuredContent: map[string]any{
					"unknownField": map[string]any{"nested": []any{true, nil, "x\"y"}},
					"big":          12345678901234,
				},
			}, nil
		})
	return b
}

// mode is one way of serving the backend.
type mode struct {
	name      string
	transport Transport
	handler   func(*mcp.Server) http.Handler
	stateful  bool // has backend sessions
	streams   bool // can send server messages on a call's stream
}

var (
	modeStreamable = mode{"streamable", TransportStreamableHTTP, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}, true, true}
	modeStateless = mode{"stateless", TransportStreamableHTTP, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	}, false, false}
	modeJSON = mode{"json-response", TransportStreamableHTTP, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	}, true, false}
	modeSSE = mode{"legacy-sse", TransportSSE, func(s *mcp.Server) http.Handler {
		return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}, false, true}
	modeEventStore = mode{"streamable-event-store", TransportStreamableHTTP, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	}, true, true}
	allModes = []mode{modeStreamable, modeStateless, modeJSON, modeSSE}
)

// exchange is one HTTP request the backend received, and what it sent.
type exchange struct {
	Method string
	Header http.Header
	Body   []byte // the request body
	Status int
	Resp   *bytes.Buffer // the response body as written (may still be growing)
}

// recorder is an http middleware around the SDK handler that records
// every exchange, so tests observe the wire without mocking HTTP.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	ex   []*exchange
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	e := &exchange{Method: r.Method, Header: r.Header.Clone(), Body: body, Resp: new(bytes.Buffer)}
	rec.mu.Lock()
	rec.ex = append(rec.ex, e)
	rec.mu.Unlock()
	rec.next.ServeHTTP(&captureWriter{ResponseWriter: w, rec: rec, e: e}, r)
}

// exchanges returns a snapshot of the recorded exchanges.
func (rec *recorder) exchanges() []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]exchange, len(rec.ex))
	for i, e := range rec.ex {
		out[i] = *e
		out[i].Resp = bytes.NewBuffer(bytes.Clone(e.Resp.Bytes()))
	}
	return out
}

// posted returns the JSON-RPC requests POSTed with the given method.
func (rec *recorder) posted(method string) []exchange {
	var out []exchange
	for _, e := range rec.exchanges() {
		if e.Method != http.MethodPost {
			continue
		}
		if msg, err := jsonrpc.DecodeMessage(e.Body); err == nil {
			if r, ok := msg.(*jsonrpc.Request); ok && r.Method == method {
				out = append(out, e)
			}
		}
	}
	return out
}

func (rec *recorder) count(httpMethod string) int {
	n := 0
	for _, e := range rec.exchanges() {
		if e.Method == httpMethod {
			n++
		}
	}
	return n
}

type captureWriter struct {
	http.ResponseWriter
	rec *recorder
	e   *exchange
}

func (w *captureWriter) WriteHeader(code int) {
	w.rec.mu.Lock()
	w.e.Status = code
	w.rec.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.rec.mu.Lock()
	if w.e.Status == 0 {
		w.e.Status = http.StatusOK
	}
	w.e.Resp.Write(p)
	w.rec.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serve starts the backend in mode m behind a recorder.
func serve(t *testing.T, b *backend, m mode) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{next: m.handler(b.server)}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return srv, rec
}

// newClient returns a client for srv, closed at cleanup.
func newClient(t *testing.T, url string, m mode, timeout time.Duration) *Client {
	t.Helper()
	c := New(Config{Key: testKey, URL: url, Transport: m.transport, Timeout: timeout})
	t.Cleanup(c.Close)
	return c
}

// open opens a handshaked connection, closed at cleanup.
func open(t *testing.T, c *Client, h Handshake) *Conn {
	t.Helper()
	conn, err := c.Open(context.Background(), h, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { conn.Close(false) })
	return conn
}

func callParams(t *testing.T, name string, meta map[string]any) json.RawMessage {
	t.Helper()
	p := map[string]any{"name": name, "arguments": map[string]any{"q": "x"}}
	if meta != nil {
		p["_meta"] = meta
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// toolText returns the first text content of a tools/call result.
func toolText(t *testing.T, resp *jsonrpc.Response) string {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("unexpected JSON-RPC error: %v", resp.Error)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("bad tools/call result %s: %v", resp.Result, err)
	}
	return res.Content[0].Text
}

func requestID(t *testing.T, body []byte) any {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return msg.(*jsonrpc.Request).ID.Raw()
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failsafe):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func mustUpstreamError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got nil")
	}
	ue, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T (%v) is not *upstream.Error", err, err)
	}
	if ue.Backend != testKey || !strings.Contains(err.Error(), `backend "`+testKey+`"`) {
		t.Errorf("error %q does not name backend %q", err, testKey)
	}
	return ue
}
