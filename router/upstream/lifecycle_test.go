package upstream

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// closedPortURL returns a URL nothing listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// blackholeURL returns a URL whose server accepts connections and never
// answers, so only a timeout can end a request.
func blackholeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// Close, then the client's and the server's own cleanup, leave no
// goroutine behind: goleak names any that is left, with its stack, and
// gives the ones already on their way out a moment to end.
func TestConn_NoGoroutineLeakAfterClose(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			b := newBackend()
			srv := httptest.NewServer(m.handler(b.server))
			c := New(Config{Key: testKey, URL: srv.URL, Transport: m.transport, Timeout: 10 * time.Second})

			conn, err := c.Open(context.Background(), Handshake{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A completed call, a server request answered by the client, and a
			// call abandoned by its caller all leave state behind to clean up.
			if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "progress", map[string]any{"progressToken": 1}), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "sample", nil), nil); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := conn.Call(ctx, "tools/call", callParams(t, "block", nil), nil)
				errc <- err
			}()
			wait(t, b.started, "tool start")
			cancel()
			wait(t, errc, "Call to return")
			wait(t, b.cancelled, "tool to observe cancellation")

			if err := conn.Close(false); err != nil {
				t.Fatal(err)
			}
			c.Close()
			srv.Close()
			goleak.VerifyNone(t, before)
		})
	}
}

func TestConn_CloseAbortsInFlightCall(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			b := newBackend()
			srv, _ := serve(t, b, m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{})
			errc := make(chan error, 1)
			go func() {
				_, err := conn.Call(context.Background(), "tools/call", callParams(t, "block", nil), nil)
				errc <- err
			}()
			wait(t, b.started, "tool start")
			conn.Close(false)
			if err := wait(t, errc, "Call to return"); err == nil || !strings.Contains(err.Error(), ErrClosed.Error()) {
				t.Errorf("in-flight Call after Close: %v, want ErrClosed", err)
			}
		})
	}
}
