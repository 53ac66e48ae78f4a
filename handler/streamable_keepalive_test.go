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
	hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.url+"/servers/demo/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"k"}}}`))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("Mcp-Session-Id", sid)
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
