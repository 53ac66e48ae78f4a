package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Text string `json:"text"`
}

// testServer is a go-sdk MCP server with an echo tool and extra tools
// (tool-1, tool-2, ...) on an httptest server.
type testServer struct {
	URL  string
	srv  *mcp.Server
	hits atomic.Int64 // HTTP requests, by any method
	// lastHeader is the header of the latest request.
	lastHeader atomic.Pointer[http.Header]
}

type serverOpts struct {
	jsonResponse, stateless bool
	pageSize, extraTools    int
}

func startServer(t testing.TB, o serverOpts) *testServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-test", Version: "v0"}, &mcp.ServerOptions{PageSize: o.pageSize})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("this tool always fails")
	})
	for i := 1; i <= o.extraTools; i++ {
		mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("tool-%d", i)}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: o.jsonResponse, Stateless: o.stateless})
	ts := &testServer{srv: srv}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		hdr := r.Header.Clone()
		ts.lastHeader.Store(&hdr)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ts.URL = hs.URL + "/mcp"
	return ts
}

func (ts *testServer) sessions() int {
	n := 0
	for range ts.srv.Sessions() {
		n++
	}
	return n
}

func newTestClient(url string, headers http.Header) *Client {
	return NewClient(&ClientConfig{URL: url, HTTP: newHTTPClient(2, 10*time.Second), Headers: headers, Proto: DefaultProto})
}

var serverKinds = []struct {
	name string
	opts serverOpts
}{
	{"sse", serverOpts{}},
	{"json", serverOpts{jsonResponse: true}},
	{"stateless", serverOpts{stateless: true}},
	{"stateless-json", serverOpts{stateless: true, jsonResponse: true}},
}

func TestClientCall(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			ts := startServer(t, k.opts)
			c := newTestClient(ts.URL, nil)
			ctx := t.Context()
			if err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			if c.ProtocolVersion() != DefaultProto {
				t.Errorf("protocol version %q", c.ProtocolVersion())
			}
			if got := c.SessionID() != ""; got == k.opts.stateless {
				t.Errorf("session id %q with stateless=%t", c.SessionID(), k.opts.stateless)
			}
			for i := range 3 {
				text := fmt.Sprintf("hello %d", i)
				params, _ := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"text": text}})
				res, err := c.Call(ctx, "tools/call", params)
				if err != nil {
					t.Fatal(err)
				}
				var out mcp.CallToolResult
				if err := json.Unmarshal(res, &out); err != nil {
					t.Fatal(err)
				}
				if got := out.Content[0].(*mcp.TextContent).Text; got != text {
					t.Errorf("echo = %q, want %q", got, text)
				}
			}
			h := *ts.lastHeader.Load()
			if got := h.Get("Mcp-Protocol-Version"); got != DefaultProto {
				t.Errorf("MCP-Protocol-Version header = %q", got)
			}
			if got := h.Get("Mcp-Session-Id"); got != c.SessionID() {
				t.Errorf("Mcp-Session-Id header = %q, want %q", got, c.SessionID())
			}

			// Errors are classified.
			_, err := c.Call(ctx, "tools/call", json.RawMessage(`{"name":"nope","arguments":{}}`))
			if key := errorKey(err); key != "jsonrpc -32602" {
				t.Errorf("unknown tool: %v (key %q)", err, key)
			}
			// The go-sdk answers an unknown method with HTTP 400.
			_, err = c.Call(ctx, "no/such/method", nil)
			if key := errorKey(err); key != "http 400" || !strings.Contains(err.Error(), "unsupported") {
				t.Errorf("unknown method: %v (key %q)", err, key)
			}

			if err := c.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if n := ts.sessions(); n != 0 {
				t.Errorf("%d server sessions after Close", n)
			}
		})
	}
}

func TestClientSessionGone(t *testing.T) {
	ts := startServer(t, serverOpts{})
	c := newTestClient(ts.URL, nil)
	if err := c.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.sessionID = "no-such-session"
	_, err := c.Call(t.Context(), "tools/list", nil)
	var re *RequestError
	if !errors.As(err, &re) || re.Key() != "http 404" {
		t.Fatalf("unknown session: %v, want http 404", err)
	}
}

func TestClientInitializeErrors(t *testing.T) {
	// An HTTP error carries the server's message.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32010,"message":"missing bearer token"}}`)
	}))
	defer hs.Close()
	err := newTestClient(hs.URL, nil).Initialize(t.Context())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "missing bearer token") {
		t.Errorf("401: %v", err)
	}

	// Nothing listening.
	hs2 := httptest.NewServer(http.NotFoundHandler())
	url := hs2.URL
	hs2.Close()
	err = newTestClient(url, nil).Initialize(t.Context())
	if errorKey(err) != KindTransport || !strings.Contains(err.Error(), "refused") {
		t.Errorf("closed port: %v", err)
	}

	// Not an MCP server.
	hs3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>hello</html>")
	}))
	defer hs3.Close()
	err = newTestClient(hs3.URL, nil).Initialize(t.Context())
	if errorKey(err) != KindProtocol || !strings.Contains(err.Error(), "text/html") {
		t.Errorf("html server: %v", err)
	}
}

func TestClientReadsEventStreams(t *testing.T) {
	// Hand-written streams: a notification and a server request before the
	// response, CRLF line ends, data split over two lines, a comment, and
	// a last event with no blank line after it.
	streams := map[string]string{
		"notifications first": "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
			"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n\n" +
			": a comment\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}\n\n",
		"crlf":          "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}\r\n\r\n",
		"multi-line":    "data: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{\"ok\":true}}\n\n",
		"no blank line": "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}",
		"long line":     "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true,\"pad\":\"" + strings.Repeat("x", 100<<10) + "\"}}\n\n",
		"string id":     "data: {\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{\"ok\":true}}\n\n",
	}
	for name, stream := range streams {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, stream)
			}))
			defer hs.Close()
			res, err := newTestClient(hs.URL, nil).Call(t.Context(), "x", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(res), `{"ok":true`) {
				t.Errorf("result = %.40s", res)
			}
		})
	}

	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
	}))
	defer hs.Close()
	_, err := newTestClient(hs.URL, nil).Call(t.Context(), "x", nil)
	if errorKey(err) != KindProtocol {
		t.Errorf("stream with no response: %v", err)
	}
}

func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer hs.Close()
	defer close(release)
	c := NewClient(&ClientConfig{URL: hs.URL, HTTP: newHTTPClient(1, 50*time.Millisecond)})
	_, err := c.Call(t.Context(), "x", nil)
	if errorKey(err) != KindTimeout {
		t.Errorf("slow server: %v (key %q), want timeout", err, errorKey(err))
	}
}

func TestEncodeMessage(t *testing.T) {
	got := string(encodeMessage(42, "tools/call", json.RawMessage(`{"name":"echo"}`), true))
	if want := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo"}}`; got != want {
		t.Errorf("request = %s", got)
	}
	got = string(encodeMessage(0, "notifications/initialized", nil, false))
	if want := `{"jsonrpc":"2.0","method":"notifications/initialized"}`; got != want {
		t.Errorf("notification = %s", got)
	}
}

func TestClientStreamLeftOpen(t *testing.T) {
	// A server that sends the response and keeps the stream open costs
	// the client streamEndWait, not its request timeout.
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(release)
	start := time.Now()
	if _, err := newTestClient(hs.URL, nil).Call(t.Context(), "x", nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > streamEndWait+2*time.Second {
		t.Errorf("took %v", took)
	}
}
