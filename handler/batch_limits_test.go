package handler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// batchOf builds a batch of n calls made by call(i).
func batchOf(n int, call func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = call(i)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func echoCall(i int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"e%d"}}}`, i, i)
}

func TestBatch_LongerThanMaxBatchIsRefusedWhole(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize20250326()
	g.one.ResetCounts()
	r := g.do(req{body: batchOf(51, echoCall), session: sid})
	if r.status != http.StatusBadRequest || r.rpc.Error == nil || r.rpc.Error.Code != -32600 ||
		!strings.Contains(r.rpc.Error.Message, "50") || !strings.Contains(r.rpc.Error.Message, "max_batch") {
		t.Fatalf("batch of 51: status %d body %.300s; want 400, -32600 naming the limit of 50", r.status, r.body)
	}
	if n := g.one.Count("tools/call"); n != 0 {
		t.Fatalf("a refused batch made %d backend calls", n)
	}
	// 53,000 elements fit in the default body limit; they are refused
	// just the same.
	r = g.do(req{body: batchOf(53000, func(int) string { return `{"jsonrpc":"2.0","method":"notifications/initialized"}` }), session: sid})
	if r.status != http.StatusBadRequest || r.rpc.Error == nil || r.rpc.Error.Code != -32600 {
		t.Fatalf("batch of 53000: status %d body %.300s", r.status, r.body)
	}

	// The limit itself is allowed, answered in order.
	r = g.do(req{body: batchOf(50, echoCall), session: sid})
	var out []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil || len(out) != 50 {
		t.Fatalf("batch of 50: status %d, %d answers: %.300s", r.status, len(out), r.body)
	}
	for i, a := range out {
		if a.ID != i || !strings.Contains(string(a.Result), fmt.Sprintf(`"e%d"`, i)) {
			t.Fatalf("answer %d is %d %s: want the batch's order", i, a.ID, a.Result)
		}
	}
}

func TestBatch_RunsAtMost8CallsAtOnce(t *testing.T) {
	g := startGateway(t, gwOptions{oneTimeout: 2 * time.Minute})
	sid := g.initialize20250326()
	g.one.ResetCounts()
	const n = 11
	type answer struct {
		status  int
		payload string
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		st, p, err := g.rawPost(sid, batchOf(n, func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"%d"}}}`, i, i)
		}))
		done <- answer{st, p, err}
	}()
	started := func() string {
		t.Helper()
		select {
		case tag := <-g.one.Started:
			return tag
		case <-time.After(time.Minute):
			t.Fatal("no call of the batch started")
			return ""
		}
	}
	running := map[string]bool{}
	for len(running) < 8 {
		running[started()] = true
	}
	// The calls are taken in order: the eight running are the first eight.
	for i := range 8 {
		if !running[fmt.Sprint(i)] {
			t.Fatalf("running %v: want the batch's first 8 calls", running)
		}
	}
	// While all eight block, no ninth reaches the backend.
	if g.one.WaitCount("tools/call", 9, time.Second) {
		t.Fatalf("%d calls of one batch reached the backend at once; the bound is 8", g.one.Count("tools/call"))
	}
	// Each call that ends lets the next one start.
	next := 8
	for len(running) > 0 {
		var tag string
		for tag = range running {
			break
		}
		delete(running, tag)
		cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + tag + `}}`
		if r := g.do(req{body: cancel, session: sid}); r.status != http.StatusAccepted {
			t.Fatalf("cancel %s: %d %s", tag, r.status, r.body)
		}
		if next < n {
			if got := started(); got != fmt.Sprint(next) {
				t.Fatalf("call %s started after one ended; want %d, the next in order", got, next)
			}
			running[fmt.Sprint(next)] = true
			next++
		}
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the batch was never answered")
	}
	var out []struct {
		ID    int `json:"id"`
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.payload), &out); err != nil || len(out) != n {
		t.Fatalf("batch answer: %d %s %v", a.status, a.payload, a.err)
	}
	for i, o := range out {
		if o.ID != i || o.Error == nil || o.Error.Code != -32800 {
			t.Fatalf("answer %d: %+v, want id %d cancelled, in order: %s", i, o, i, a.payload)
		}
	}
}
