package handler_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowPost writes a POST's headers and the first bytes of its body on a
// raw connection, then one more byte every interval until stop is closed
// or the server stops reading: the hostile client that trickles a body.
func (g *gw) slowPost(t *testing.T, sid string, interval time.Duration, stop <-chan struct{}) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", g.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	head := fmt.Sprintf("POST /servers/demo/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n",
		g.srv.Listener.Addr(), g.token("alice"), sid, len(body))
	if _, err := io.WriteString(conn, head+body[:5]); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 5; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(conn, body[i:i+1]); err != nil {
				return
			}
		}
	}()
	return conn
}

func TestReadTimeout_TrickledBodyIs408(t *testing.T) {
	g := startGateway(t, gwOptions{readTimeout: 300 * time.Millisecond})
	sid := g.initialize("alice", "demo")
	stop := make(chan struct{})
	defer close(stop)
	// A byte every 50ms: every read makes progress, the whole body would
	// take about 3s.
	conn := g.slowPost(t, sid, 50*time.Millisecond, stop)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound for the test, not the signal
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"code":-32600`) || !strings.Contains(string(body), "read timeout") {
		t.Fatalf("status %d body %.300s: want 408 with a -32600 error naming the read timeout", res.StatusCode, body)
	}
	// And the connection is closed (EOF, or a reset as the client is still
	// writing): the client cannot keep trickling.
	var ne net.Error
	if _, err := br.ReadByte(); err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("after the 408 the connection stays open: %v", err)
	}
}

// The read deadline is lifted once the body has been read: a call that
// runs far longer than it, answered as JSON or as a stream, and a GET
// stream, are not cut.
func TestReadTimeout_DoesNotCutLongCallsOrStreams(t *testing.T) {
	g := startGateway(t, gwOptions{readTimeout: 500 * time.Millisecond, keepAlive: 50 * time.Millisecond})
	sid := g.initialize("alice", "demo")
	long := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":12,"delayMs":100}}}`
	withToken := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":12,"delayMs":100},"_meta":{"progressToken":"p"}}}`
	for _, tc := range []struct{ name, body, accept string }{
		{"json answer", long, "application/json"},
		{"answer that becomes a stream", long, "application/json, text/event-stream"},
		{"stream from the start", withToken, "text/event-stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.do(req{body: tc.body, session: sid, headers: map[string]string{"Accept": tc.accept}})
			if r.status != 200 || r.rpc.Error != nil || !strings.Contains(string(r.rpc.Result), `"done"`) {
				t.Fatalf("a call longer than the read timeout: %d %.300s", r.status, r.body)
			}
		})
	}
	t.Run("GET stream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		hr, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/servers/demo/mcp", nil)
		hr.Header.Set("Accept", "text/event-stream")
		hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
		hr.Header.Set("Mcp-Session-Id", sid)
		res, err := http.DefaultClient.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		// 30 keep-alives, 50ms apart: the stream outlives the read timeout
		// three times over.
		lines, seen := bufio.NewScanner(res.Body), 0
		for seen < 30 && lines.Scan() {
			if lines.Text() == ": keep-alive" {
				seen++
			}
		}
		if seen < 30 {
			t.Fatalf("the GET stream ended after %d keep-alives: %v", seen, lines.Err())
		}
	})
}
