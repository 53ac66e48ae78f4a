package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// sseEvent is one Server-Sent Event: its id and its data (empty for the
// priming event).
type sseEvent struct{ id, data string }

// readSSE reads events from r until it ends or stop says so.
func readSSE(r io.Reader, stop func([]sseEvent) bool) []sseEvent {
	var evs []sseEvent
	var cur sseEvent
	seen := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if seen {
				evs = append(evs, cur)
				if stop != nil && stop(evs) {
					return evs
				}
			}
			cur, seen = sseEvent{}, false
		case strings.HasPrefix(line, "id:"):
			cur.id, seen = strings.TrimSpace(strings.TrimPrefix(line, "id:")), true
		case strings.HasPrefix(line, "data:"):
			cur.data, seen = strings.TrimSpace(strings.TrimPrefix(line, "data:")), true
		}
	}
	return evs
}

// A GET stream through the Function URL streams for as long as the
// invocation may (here MCPGW_LAMBDA_STREAM_MAX), carries the session's
// notifications, then ends cleanly; the client resumes with Last-Event-ID
// on any instance and gets what it missed from the event log.
func TestFunctionURL_GETStreamEndsCleanlyAndResumesElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const streamMax = 3 * time.Second
	lam := &functionURL{rie: startRIE(t, f.lambdaEnv("url", envStreamMax+"="+streamMax.String())...), domain: functionURLDomain}
	plain := f.startPlain()
	one := f.backends["gateway-one"]

	c := f.client(t, "grace")
	c.Initialize(plain, nil)
	c.Call(plain, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"})

	// The invocation holds the stream; the emulator hands over the whole
	// response once it ends.
	gets := one.Count("GET")
	ev := lam.event(t, http.MethodGet, c.Path(), c.Header("text/event-stream"), nil)
	type result struct {
		payload []byte
		err     error
		took    time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		b, err := lam.rie.tryInvoke(ev)
		done <- result{b, err, time.Since(start)}
	}()
	if !one.WaitCount("GET", gets+1, 10*time.Second) {
		t.Fatal("the Lambda invocation opened no backend listener for the GET stream")
	}
	c.Call(plain, "tools/call", map[string]any{"name": "gateway-one-increment"})

	var res result
	select {
	case res = <-done:
	case <-time.After(streamMax + 15*time.Second):
		t.Fatal("the GET stream invocation did not end")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.took < streamMax-500*time.Millisecond {
		t.Errorf("the stream ended after %v, before MCPGW_LAMBDA_STREAM_MAX (%v)", res.took, streamMax)
	}
	r := parseStreamingResponse(t, res.payload)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %q: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	evs := readSSE(bytes.NewReader(r.body), nil)
	if len(evs) < 2 || evs[0].id == "" || evs[0].data != "" {
		t.Fatalf("want a priming event then the update, got %+v", evs)
	}
	var update *sseEvent
	for i := range evs[1:] {
		if strings.Contains(evs[1+i].data, "notifications/resources/updated") {
			update = &evs[1+i]
		}
	}
	if update == nil || update.id == "" {
		t.Fatalf("no resources/updated event with an id on the Lambda stream: %+v", evs)
	}

	// Resume on the plain server from the priming event: the update is
	// replayed from the event log with the same id.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, plain.base+c.Path(), nil)
	for k, v := range c.Header("text/event-stream") {
		req.Header[k] = v
	}
	req.Header.Set("Last-Event-ID", evs[0].id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume on the plain server: %d", resp.StatusCode)
	}
	replayed := readSSE(resp.Body, func(evs []sseEvent) bool { return evs[len(evs)-1].data != "" })
	if n := len(replayed); n == 0 || replayed[n-1].id != update.id {
		t.Fatalf("resumed stream %+v, want the update %s replayed", replayed, update.id)
	}
}

// A backend's sampling request during a call through the Function URL goes
// out on the call's stream; the client's answer, POSTed to another
// instance, reaches the invocation over the store's bus and the call
// completes. (The emulator hands over the stream only at its end, so the
// test finds the request's gateway-issued id where the invocation records
// it for the other instances: the session's p:<id> field.)
func TestFunctionURL_SamplingDuringACallAnsweredOnAnotherInstance(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lam := &functionURL{rie: startRIE(t, f.lambdaEnv("url")...), domain: functionURLDomain}
	plain := f.startPlain()

	c := f.client(t, "heidi")
	c.Initialize(plain, map[string]any{"sampling": map[string]any{}})
	h := c.Header("application/json, text/event-stream")
	h.Set("Content-Type", "application/json")
	ev := lam.event(t, http.MethodPost, c.Path(), h, mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": c.NextID(), "method": "tools/call",
		"params": map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "6x7?"}}}))
	done := make(chan []byte, 1)
	errc := make(chan error, 1)
	go func() {
		b, err := lam.rie.tryInvoke(ev)
		if err != nil {
			errc <- err
			return
		}
		done <- b
	}()

	var pending string
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		fields, _ := redisSrv.Client().HKeys(t.Context(), "mcpgw:{"+c.SessionID+"}:session").Result()
		for _, k := range fields {
			if id, ok := strings.CutPrefix(k, "p:"); ok {
				pending = id // the JSON-RPC id, as JSON
				return true
			}
		}
		return false
	}) {
		t.Fatal("the invocation recorded no pending sampling request")
	}
	answer := []byte(`{"jsonrpc":"2.0","id":` + pending + `,"result":{"role":"assistant","content":{"type":"text","text":"42"},"model":"m"}}`)
	ah := c.Header("application/json, text/event-stream")
	ah.Set("Content-Type", "application/json")
	if r := plain.do(t, http.MethodPost, c.Path(), ah, answer); r.status != http.StatusAccepted {
		t.Fatalf("answer on the plain server: %d %s", r.status, r.body)
	}

	var payload []byte
	select {
	case payload = <-done:
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not complete after the answer")
	}
	res := parseStreamingResponse(t, payload)
	r := testsupport.ParseReply(t, res.status, res.header, res.body)
	if len(r.Messages) != 2 || r.Messages[0].Method != "sampling/createMessage" || string(r.Messages[0].ID) != pending {
		t.Fatalf("want the sampling request (id %s) then the result on the call's stream: %s", pending, r.Body)
	}
	if got := r.Text(); got != "model said: 42" {
		t.Fatalf("result %q", got)
	}
}
