package handler_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router/upstream"
)

func echoOf(id int, tool string, size int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":%q}}}`,
		id, tool, strings.Repeat("x", size))
}

// The bytes of backend answers an instance holds at once are bounded: an
// answer read while the budget is taken waits for room (here until its
// backend's timeout), one larger than the whole budget fails at once, and
// everything is given back once the answers are written.
func TestResponseBudget_BoundsAnswersHeldAtOnce(t *testing.T) {
	const size = 256 << 10
	budget := upstream.NewBudget(size)
	g := startGateway(t, gwOptions{budget: budget, oneTimeout: 2 * time.Minute, twoTimeout: 3 * time.Second})
	sid := g.initialize20250326()

	// A batch answered as one JSON array holds each call's answer until
	// the last call ends: a 200 KiB echo, then a call that blocks.
	type answer struct {
		status  int
		payload string
		err     error
	}
	batchDone := make(chan answer, 1)
	go func() {
		st, p, err := g.rawPost(sid, "["+echoOf(1, "gateway-one-echo", 200<<10)+
			`,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway-one-block","arguments":{"tag":"hold"}}}]`)
		batchDone <- answer{st, p, err}
	}()
	select {
	case <-g.one.Started:
	case <-time.After(time.Minute):
		t.Fatal("the blocking call never started")
	}
	if !testsupport.Eventually(t, 30*time.Second, func() bool { return budget.Held() >= 200<<10 }) {
		t.Fatalf("the batch's echo answer is not held: %d bytes", budget.Held())
	}

	// Another 200 KiB answer does not fit beside it: it waits, and its
	// backend's 3s timeout ends the wait.
	r := g.do(req{body: echoOf(3, "gateway-two-echo", 200<<10), session: sid})
	if r.status != 200 || r.rpc.Error == nil || r.rpc.Error.Code != -32603 ||
		!strings.Contains(r.rpc.Error.Message, `"gateway-two"`) || !strings.Contains(r.rpc.Error.Message, "in-flight response budget") {
		t.Fatalf("an answer beyond the budget: %d %.300s; want -32603 naming gateway-two and the budget", r.status, r.body)
	}
	if held := budget.Held(); held > size {
		t.Fatalf("%d bytes held, over the budget of %d", held, size)
	}

	// Once the batch is answered its bytes are given back...
	if r := g.do(req{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, session: sid}); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.status)
	}
	select {
	case a := <-batchDone:
		if a.err != nil || a.status != 200 || !strings.Contains(a.payload, strings.Repeat("x", 1000)) {
			t.Fatalf("batch: %d %.300s %v", a.status, a.payload, a.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the batch was never answered")
	}
	if !testsupport.Eventually(t, 30*time.Second, func() bool { return budget.Held() == 0 }) {
		t.Fatalf("%d bytes still held after every answer was written", budget.Held())
	}
	// ...and the same answer now fits.
	r = g.do(req{body: echoOf(4, "gateway-two-echo", 200<<10), session: sid})
	if r.status != 200 || r.rpc.Error != nil || !strings.Contains(string(r.rpc.Result), strings.Repeat("x", 200<<10)) {
		t.Fatalf("an answer within the budget: %d %.300s", r.status, r.body)
	}

	// An answer larger than the whole budget fails at once (not at the
	// backend's two-minute timeout), naming the backend.
	r = g.do(req{body: echoOf(5, "gateway-one-echo", 300<<10), session: sid})
	if r.status != 200 || r.rpc.Error == nil || r.rpc.Error.Code != -32603 ||
		!strings.Contains(r.rpc.Error.Message, `"gateway-one"`) || !strings.Contains(r.rpc.Error.Message, "larger than the in-flight response budget") {
		t.Fatalf("an answer larger than the budget: %d %.300s", r.status, r.body)
	}
	if !testsupport.Eventually(t, 30*time.Second, func() bool { return budget.Held() == 0 }) {
		t.Fatalf("%d bytes still held at the end", budget.Held())
	}
}

// A call's stream passes progress on as it comes: those events are not
// held until the answer, so a long stream of them fits a small budget.
func TestResponseBudget_StreamEventsAreGivenBackAsPassedOn(t *testing.T) {
	budget := upstream.NewBudget(16 << 10) // fits a few events, not 400
	g := startGateway(t, gwOptions{budget: budget})
	sid := g.initialize("alice", "demo")
	r := g.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":400},"_meta":{"progressToken":"p"}}}`,
		session: sid, headers: map[string]string{"Accept": "text/event-stream"}})
	if r.status != 200 || r.rpc.Error != nil || !strings.Contains(string(r.rpc.Result), `"done"`) || strings.Count(r.body, "notifications/progress") != 400 {
		t.Fatalf("a call with 400 progress events: %d, %d progress events, %.300s", r.status, strings.Count(r.body, "notifications/progress"), r.rpc.Result)
	}
	if !testsupport.Eventually(t, 30*time.Second, func() bool { return budget.Held() == 0 }) {
		t.Fatalf("%d bytes held after the call", budget.Held())
	}
}
