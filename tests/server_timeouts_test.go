package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// withServerTimeouts starts a gateway whose server section is short, so
// the tests see each timeout act; keep-alives are frequent, as a clock
// for streams that must outlive them.
func withServerTimeouts(t *testing.T) (*cluster, *testsupport.GatewayProcess) {
	t.Helper()
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	base, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig("server:\n  read_header_timeout: 1s\n  read_timeout: 500ms\n  idle_timeout: 1s\n" +
		"streams:\n  keep_alive: 100ms\n" + string(base))
	return c, c.start()
}

// closedByServer waits, up to a generous bound, for the server to close
// conn; it reports what the read saw.
func closedByServer(t *testing.T, r io.Reader, conn net.Conn) error {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := r.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the connection is still open after 30s (%v)", err)
	}
	return nil
}

func TestServerTimeouts_IdleConnectionsAreClosed(t *testing.T) {
	_, gw := withServerTimeouts(t)
	addr := strings.TrimPrefix(gw.URL, "http://")

	t.Run("silent new connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := closedByServer(t, conn, conn); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("keep-alive connection after a request", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || res.Close {
			t.Fatalf("healthz: %d, close %v: want a kept-alive 200", res.StatusCode, res.Close)
		}
		if err := closedByServer(t, br, conn); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServerTimeouts_TrickledBodyIs408(t *testing.T) {
	c, gw := withServerTimeouts(t)
	cl := c.client("alice")
	cl.Initialize(gw, nil)
	addr := strings.TrimPrefix(gw.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	head := fmt.Sprintf("POST /servers/demo/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\n"+
		"Authorization: Bearer %s\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", addr, cl.Token, cl.SessionID, len(body))
	if _, err := io.WriteString(conn, head+body[:1]); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a byte every 100ms: each read progresses, the body never ends in time
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 1; i < len(body); i++ {
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
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"code":-32600`) {
		t.Fatalf("status %d body %.300s: want 408 with a -32600 error", res.StatusCode, b)
	}
}

// read_timeout bounds reading a request, never the answer: a GET stream
// and a call running past it carry on.
func TestServerTimeouts_StreamsAndLongCallsOutliveTheReadTimeout(t *testing.T) {
	c, gw := withServerTimeouts(t)
	cl := c.client("alice")
	cl.Initialize(gw, nil)
	s := cl.Stream(gw, "")
	// 12 steps of 100ms; answered as a stream (keep-alives every 100ms).
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, mcpURL(gw.URL), strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":12,"delayMs":100}}}`))
	req.Header = cl.Header("application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	call := make(chan string, 1)
	go func() { // not cl.Open: a goroutine may not fail the test
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			call <- err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		call <- fmt.Sprintf("%d %s", res.StatusCode, b)
	}()
	// 15 events, 100ms apart: three times the read timeout.
	for range 15 {
		s.NextRaw()
	}
	select {
	case r := <-call:
		if !strings.HasPrefix(r, "200 ") || !strings.Contains(r, `"done"`) || !strings.Contains(r, `"id":7`) {
			t.Fatalf("a call longer than read_timeout: %.300s", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long call never answered")
	}
}
