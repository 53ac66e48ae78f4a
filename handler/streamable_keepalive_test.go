package handler_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A long call keeps its connection busy: after one keep-alive interval the
// answer becomes an event stream that carries comments until the call
// ends, so a proxy that cuts idle connections does not cut it.
func TestKeepAlive_LongCallBecomesAStreamWithComments(t *testing.T) {
	g := startGateway(t, gwOptions{keepAlive: 50 * time.Millisecond})
	sid := g.initialize("alice", "demo")
	// Bounded: without keep-alives the headers would wait for the call.
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	hr := g.callRequest(ctx, sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"k"}}}`)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("a call running past the keep-alive interval answered %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	comments := 0
	for comments < 2 && lines.Scan() {
		if lines.Text() == ": keep-alive" {
			comments++
		}
	}
	if comments < 2 {
		t.Fatalf("stream ended after %d keep-alive comments: %v", comments, lines.Err())
	}
	// End the call; its answer is the stream's last event.
	if r := g.do(req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, session: sid}); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.status)
	}
	var last string
	for lines.Scan() {
		if d, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			last = d
		}
	}
	if !strings.Contains(last, `"id":5`) || !strings.Contains(last, `"error"`) {
		t.Fatalf("last event %q, want the cancelled call's answer", last)
	}
}

// A client that drops the connection before it holds any event id cannot
// resume the call, so the call ends with the connection: the backend sees
// the cancellation.
func TestDisconnect_BeforeAnyEventIDEndsTheCall(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	ctx, cancel := context.WithCancel(t.Context())
	hr := g.callRequest(ctx, sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"gone"}}}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(hr); err == nil {
			res.Body.Close()
		}
	}()
	select {
	case <-g.one.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never started")
	}
	cancel() // the client goes away
	<-done
	select {
	case tag := <-g.one.Cancelled:
		if tag != "gone" {
			t.Fatalf("cancelled %q", tag)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend call outlived a client that cannot resume it")
	}
}

// callRequest is a POST of body on session sid, bound to ctx, accepting
// either answer type, for tests that read the response themselves.
func (g *gw) callRequest(ctx context.Context, sid, body string) *http.Request {
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.url+"/servers/demo/mcp", strings.NewReader(body))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("Mcp-Session-Id", sid)
	return hr
}

// A batch's shared stream is kept alive like a single call's.
func TestKeepAlive_BatchStreamGetsComments(t *testing.T) {
	g := startGateway(t, gwOptions{keepAlive: 50 * time.Millisecond})
	sid := g.initialize20250326()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	hr := g.callRequest(ctx, sid, `[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"b"}}}]`)
	hr.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() && lines.Text() != ": keep-alive" {
	}
	if lines.Err() != nil || lines.Text() != ": keep-alive" {
		t.Fatalf("no keep-alive on the batch's stream: %v", lines.Err())
	}
	if r := g.do(req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, session: sid}); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.status)
	}
	for lines.Scan() {
	}
}
