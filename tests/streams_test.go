package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

const capsAll = `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`

func TestStreams_CancelSentToAnotherInstanceReachesTheBackend(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)

	done := make(chan *testsupport.Reply, 1)
	go func() {
		done <- cl.Request(a, "tools/call", map[string]any{"name": "gateway-one-block", "arguments": map[string]any{"tag": "e2e"}})
	}()
	one := c.backends["gateway-one"]
	select {
	case <-one.Started:
	case <-time.After(15 * time.Second):
		t.Fatal("the call never started")
	}
	// The call above has the client's first request id, 1.
	if r := cl.Post(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`); r.Status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.Status)
	}
	select {
	case tag := <-one.Cancelled:
		if tag != "e2e" {
			t.Fatalf("cancelled %q", tag)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the backend never saw the cancellation sent to the other instance")
	}
	if r := <-done; r.Error() == nil || r.Error().Code != -32800 {
		t.Fatalf("cancelled call answered %d %s", r.Status, r.Body)
	}
}

func TestStreams_SamplingAnsweredOnTheOtherInstance(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, capsAll)

	s := cl.CallStreaming(a, 10, "tools/call", map[string]any{"name": "gateway-two-sample", "arguments": map[string]any{"prompt": "6x7?"}})
	req := s.Next()
	if req.Method() != "sampling/createMessage" {
		t.Fatalf("first event %s, want the sampling request", req.Data)
	}
	id := req.Msg["id"]
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","content":{"type":"text","text":"42"},"model":"m"}}`, id)
	if r := cl.Post(b, answer); r.Status != http.StatusAccepted {
		t.Fatalf("answer POSTed to the other instance: %d", r.Status)
	}
	final := s.Next()
	if !strings.Contains(final.Data, "model said: 42") {
		t.Fatalf("final result %s", final.Data)
	}
	// Answering again: nobody waits any more.
	if r := cl.Post(b, answer); r.Status != http.StatusBadRequest {
		t.Fatalf("second answer: %d, want 400", r.Status)
	}
}

func TestStreams_ProgressOnAPostStream(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	a := c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	s := cl.CallStreaming(a, 3, "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": map[string]any{"steps": 2}, "_meta": map[string]any{"progressToken": "mine"}})
	for i := 1; i <= 2; i++ {
		ev := s.Next()
		if ev.Method() != "notifications/progress" || !strings.Contains(ev.Data, `"progressToken":"mine"`) {
			t.Fatalf("event %d: %s", i, ev.Data)
		}
	}
	if final := s.Next(); !strings.Contains(final.Data, `"done"`) {
		t.Fatalf("final %s", final.Data)
	}
}

func TestStreams_SubscribeHereStreamThereResumeElsewhere(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	one := c.backends["gateway-one"]

	cl.Call(a, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"})
	gets := one.Count("GET")
	st := cl.Stream(b, "")
	prime := st.NextRaw()
	if prime.ID == "" || prime.Data != "" {
		t.Fatalf("priming event %+v: want an id and empty data", prime)
	}
	if !one.WaitCount("GET", gets+1, 15*time.Second) {
		t.Fatal("instance B opened no backend listener")
	}
	cl.Call(a, "tools/call", map[string]any{"name": "gateway-one-increment"})
	ev := st.Next()
	if ev.Method() != "notifications/resources/updated" || !strings.Contains(ev.Data, "gateway-one-test://counter") {
		t.Fatalf("event %s", ev.Data)
	}

	// Second stream of the session on the same instance: refused.
	if res := cl.Open(b, http.MethodGet, "", map[string]string{"Accept": "text/event-stream"}); res.StatusCode != http.StatusConflict {
		t.Fatalf("second GET stream: %d, want 409", res.StatusCode)
	} else {
		res.Body.Close()
	}

	// Drop the stream; events keep reaching the log; resume on A.
	st.Close()
	for range 2 {
		cl.Call(a, "tools/call", map[string]any{"name": "gateway-one-increment"})
	}
	var resumed *testsupport.SSEStream
	var missed []testsupport.SSEEvent
	// B's lingering listener logs the two updates on its own schedule: read
	// from a fresh resume until both are there.
	if !testsupport.Eventually(t, 15*time.Second, func() bool {
		if resumed != nil {
			resumed.Close()
		}
		resumed = cl.Stream(a, ev.ID)
		resumed.NextRaw() // priming
		missed = nil
		for len(missed) < 2 {
			e, ok := resumed.NextWithin(300 * time.Millisecond)
			if !ok {
				return false
			}
			missed = append(missed, e)
		}
		return true
	}) {
		t.Fatalf("missed events not replayed: %+v", missed)
	}
	if missed[0].ID == missed[1].ID || missed[0].ID <= ev.ID {
		t.Fatalf("replayed ids %q %q after %q", missed[0].ID, missed[1].ID, ev.ID)
	}
	// Live events continue on the resumed stream.
	cl.Call(b, "tools/call", map[string]any{"name": "gateway-one-increment"})
	if live := resumed.Next(); live.Method() != "notifications/resources/updated" {
		t.Fatalf("live after resume: %s", live.Data)
	}
}

func TestStreams_ConfigReloadEmitsListChanged(t *testing.T) {
	c := newCluster(t)
	a := c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	st := cl.Stream(a, "")
	st.NextRaw()
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig(strings.Replace(cfg, "Public.Tool", "Stats.Tool", 1))
	a.Signal(sighup)
	for _, want := range []string{"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"} {
		if ev := st.Next(); ev.Method() != want {
			t.Fatalf("got %s, want %s", ev.Data, want)
		}
	}
	tools := cl.Call(a, "tools/list", nil).Result()
	if !strings.Contains(toJSON(tools), "Stats.Tool") {
		t.Fatalf("reloaded alias not in force: %v", tools)
	}
}

var sighup = syscall.SIGHUP

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// A call's streamed answer is resumable on any instance: the client loses
// the connection after the first progress event, reconnects to the other
// instance with that event's id, and gets the rest, the answer last; the
// call never stopped.
func TestStreams_CallStreamResumedOnAnotherInstance(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	s := cl.CallStreaming(a, 3, "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": map[string]any{"steps": 4, "delayMs": 200}, "_meta": map[string]any{"progressToken": "t"}})
	first := s.Next()
	if first.Method() != "notifications/progress" || !strings.Contains(first.ID, "_") {
		t.Fatalf("first event %+v: want progress with a call-stream id", first)
	}
	s.Close()

	resumed := cl.Stream(b, first.ID)
	var steps []string
	for {
		ev := resumed.Next()
		if ev.Method() == "notifications/progress" {
			var p struct{ Params struct{ Progress float64 } }
			_ = json.Unmarshal([]byte(ev.Data), &p)
			steps = append(steps, fmt.Sprint(p.Params.Progress))
			continue
		}
		if !strings.Contains(ev.Data, `"done"`) || !strings.Contains(ev.Data, `"id":3`) {
			t.Fatalf("last event %s, want the call's answer", ev.Data)
		}
		break
	}
	if strings.Join(steps, ",") != "2,3,4" {
		t.Fatalf("resumed progress steps %v, want 2,3,4", steps)
	}
	// The answer ends the resumed stream.
	resumed.ExpectEnd(15 * time.Second)
}

// A resumed call whose instance died never gets an answer: once the dead
// instance's lease on the call lapses, the resume on the other instance
// ends with a -32603 error for the call's request id, rather than keeping
// the client waiting on keep-alives.
func TestStreams_ResumedCallWhoseInstanceDiedEndsWithAnError(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{StreamingTools: true})
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig("streams:\n  call_lease: 1s\n" + cfg)
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	s := cl.CallStreaming(a, 4, "tools/call", map[string]any{"name": "gateway-one-block",
		"arguments": map[string]any{"tag": "died"}, "_meta": map[string]any{"progressToken": "t"}})
	prime := s.NextRaw()
	if !strings.Contains(prime.ID, "_") {
		t.Fatalf("first event %+v: want a priming event with a call-stream id", prime)
	}
	s.Close()
	a.Kill()

	resumed := cl.Stream(b, prime.ID)
	ev := resumed.Next()
	var answer struct {
		ID    any `json:"id"`
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &answer); err != nil || answer.Error == nil ||
		answer.Error.Code != -32603 || fmt.Sprint(answer.ID) != "4" {
		t.Fatalf("resumed stream gave %s, want a -32603 error for request 4", ev.Data)
	}
	// The error ends the stream, as an answer would.
	resumed.ExpectEnd(15 * time.Second)
}
