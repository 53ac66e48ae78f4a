package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestConn_SessionGoneOnStaleSessionID(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeStreamable)
	c := newClient(t, srv.URL, modeStreamable, 10*time.Second)

	first := open(t, c, Handshake{})
	sid := first.SessionID()
	if err := first.Close(false); err != nil { // DELETE: the backend forgets sid
		t.Fatalf("Close: %v", err)
	}
	for _, stale := range []string{sid, "never-issued"} {
		conn := open(t, c, Handshake{SessionID: stale, ProtocolVersion: "2025-11-25"})
		_, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
		ue := mustUpstreamError(t, err)
		if !errors.Is(err, ErrSessionGone) || ue.Status != http.StatusNotFound {
			t.Errorf("session %q: err = %v, want ErrSessionGone with 404", stale, err)
		}
		deletes := rec.count(http.MethodDelete)
		if err := conn.Close(false); err != nil {
			t.Errorf("Close: %v", err)
		}
		if rec.count(http.MethodDelete) != deletes {
			t.Error("Close sent DELETE for a session the backend already forgot")
		}
	}
}

func TestConn_CloseSendsDelete(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeStreamable)
	c := newClient(t, srv.URL, modeStreamable, 10*time.Second)

	conn := open(t, c, Handshake{})
	sid := conn.SessionID()
	if sid == "" {
		t.Fatal("stateful backend gave no session id")
	}
	if err := conn.Close(false); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := conn.Close(false); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	var deletes []exchange
	for _, e := range rec.exchanges() {
		if e.Method == http.MethodDelete {
			deletes = append(deletes, e)
		}
	}
	if len(deletes) != 1 || deletes[0].Header.Get("Mcp-Session-Id") != sid || deletes[0].Status != http.StatusNoContent {
		t.Fatalf("DELETEs = %+v, want one for %q answered 204", deletes, sid)
	}
	if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close: %v, want ErrClosed", err)
	}

	// keep=true (reuse mode) leaves the session usable from another Conn.
	kept := open(t, c, Handshake{})
	if err := kept.Close(true); err != nil {
		t.Fatalf("Close(true): %v", err)
	}
	if n := rec.count(http.MethodDelete); n != 1 {
		t.Errorf("Close(true) sent DELETE")
	}
	reused := open(t, c, Handshake{SessionID: kept.SessionID(), ProtocolVersion: kept.ProtocolVersion()})
	if _, err := reused.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil); err != nil {
		t.Errorf("Call on kept session: %v", err)
	}
}

func TestConn_StatelessSkipInitialize(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeStateless)
	c := newClient(t, srv.URL, modeStateless, 10*time.Second)

	// The probe a session's initialize makes: a handshake, then Close.
	probe := open(t, c, Handshake{})
	if init := probe.Init(); init == nil || init.SessionID != "" {
		t.Fatalf("Init() = %+v; want a stateless result", init)
	}
	if err := probe.Close(false); err != nil {
		t.Fatal(err)
	}
	before := len(rec.posted("initialize"))

	conn := open(t, c, Handshake{SkipInitialize: true, ProtocolVersion: "2025-06-18"})
	if conn.Init() != nil {
		t.Error("Init() != nil without a handshake")
	}
	resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	toolText(t, resp)
	if n := len(rec.posted("initialize")); n != before {
		t.Errorf("SkipInitialize sent initialize")
	}
	calls := rec.posted("tools/call")
	if len(calls) != 1 || calls[0].Header.Get("Mcp-Protocol-Version") != "2025-06-18" || calls[0].Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("tools/call headers = %v", calls)
	}
	if id := requestID(t, calls[0].Body); id != int64(1) {
		t.Errorf("first request id = %v, want 1", id)
	}
	if err := conn.Close(false); err != nil || rec.count(http.MethodDelete) != 0 {
		t.Errorf("Close on a stateless backend: err %v, DELETEs %d", err, rec.count(http.MethodDelete))
	}
}

func TestConn_BadStatusIsError(t *testing.T) {
	srv, _ := serve(t, newBackend(), modeStateless)
	conn := open(t, newClient(t, srv.URL, modeStateless, 10*time.Second), Handshake{SkipInitialize: true, ProtocolVersion: "1999-01-01"})
	_, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
	ue := mustUpstreamError(t, err)
	if ue.Status != http.StatusBadRequest || errors.Is(err, ErrSessionGone) {
		t.Errorf("err = %v, want HTTP 400", err)
	}
}

func TestConn_ResumesStreamAfterBackendClosesIt(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeEventStore)
	conn := open(t, newClient(t, srv.URL, modeEventStore, 10*time.Second), Handshake{ProtocolVersion: "2025-11-25"})
	var progress []string
	resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "poll", map[string]any{"progressToken": "p"}),
		func(msg jsonrpc.Message) {
			if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "notifications/progress" {
				progress = append(progress, string(r.Params))
			}
		})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if text := toolText(t, resp); text != "polled" {
		t.Errorf("result = %q", text)
	}
	if len(progress) != 2 {
		t.Errorf("progress = %v, want 2 notifications across the break", progress)
	}
	var resumes []exchange
	for _, e := range rec.exchanges() {
		if e.Method == http.MethodGet {
			resumes = append(resumes, e)
		}
	}
	if len(resumes) != 1 || resumes[0].Header.Get("Last-Event-ID") == "" || resumes[0].Header.Get("Mcp-Session-Id") != conn.SessionID() {
		t.Errorf("resumption GETs = %+v, want one with Last-Event-ID", resumes)
	}
}

func TestConn_ReusesKeepAliveConnections(t *testing.T) {
	b := newBackend()
	var mu sync.Mutex
	dials := 0
	srv := httptest.NewUnstartedServer(modeStreamable.handler(b.server))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dials++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, modeStreamable, 10*time.Second)
	const rounds = 10
	for range rounds {
		conn := open(t, c, Handshake{})
		if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil); err != nil {
			t.Fatal(err)
		}
		if err := conn.Close(false); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// Each round is 4 sequential exchanges (initialize and tools/call
	// answered over SSE, initialized, DELETE); one pooled connection suffices.
	if dials > 3 { // 1 in practice; slack for a slow machine
		t.Errorf("%d rounds opened %d TCP connections; SSE answers are not returning connections to the pool", rounds, dials)
	}
}

// A backend thought stateless that keeps sessions now (redeployed
// stateful) refuses a request sent without a handshake, having run
// nothing: the client tells by the session id an initialize gets, and
// says ErrHandshakeRequired so the caller shakes hands and retries. The
// session that initialize opened is ended.
func TestConn_StatefulBackendRefusesASkippedHandshake(t *testing.T) {
	b := newBackend()
	srv, rec := serve(t, b, modeStreamable)
	conn := open(t, newClient(t, srv.URL, modeStreamable, 10*time.Second), Handshake{SkipInitialize: true, ProtocolVersion: "2025-11-25"})
	_, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
	if !errors.Is(err, ErrHandshakeRequired) {
		t.Fatalf("Call on a stateful backend without a handshake: %v, want ErrHandshakeRequired", err)
	}
	if n := b.echoes.Load(); n != 0 {
		t.Fatalf("the refused tool ran %d times", n)
	}
	if n := len(rec.posted("initialize")); n != 1 {
		t.Fatalf("%d initialize requests, want the one that asked for a session", n)
	}
	if !testsupport.Eventually(t, failsafe, func() bool { return rec.count(http.MethodDelete) == 1 }) {
		t.Fatalf("the session opened to ask was not ended (%d DELETEs)", rec.count(http.MethodDelete))
	}
}

// A stateless backend's own error answer to a request sent without a
// handshake passes through as its answer: asked, the backend issues no
// session, so the request is not retried (it ran, and would run twice).
func TestConn_StatelessBackendsErrorIsItsAnswer(t *testing.T) {
	b := newBackend()
	srv, rec := serve(t, b, modeStateless)
	conn := open(t, newClient(t, srv.URL, modeStateless, 10*time.Second), Handshake{SkipInitialize: true, ProtocolVersion: "2025-11-25"})
	resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "fail", nil), nil)
	if err != nil {
		t.Fatalf("Call: %v, want the backend's error answer", err)
	}
	if resp.Error == nil || !strings.Contains(resp.Error.Error(), "the tool failed") {
		t.Fatalf("answer %+v, want the tool's error", resp)
	}
	if n := b.fails.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if n := len(rec.posted("initialize")); n != 1 {
		t.Fatalf("%d initialize requests, want the one that asked for a session", n)
	}
	// A success needs no asking.
	if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.posted("initialize")); n != 1 {
		t.Fatalf("a successful call sent initialize (%d in all)", n)
	}
}
