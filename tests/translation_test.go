package tests

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2026-07-28 client on a 2025-era backend, across instances: the
// backend (gateway-two, a stateful go-sdk server: it speaks only the
// session protocol) asks the client things mid-call; the gateway parks
// the call on the instance that started it and asks the client with
// input_required, and the client's retries, on any instance, carry its
// answers to the parked call. gateway-one (stateless, 2026-07-28) shares
// the vhost, as in a real migration.

// newLegacyBackendCluster is three instances over gateway-one (2026-07-28)
// and gateway-two (session protocol only, with the streaming and asking
// tools); streams is YAML for the config's streams section ("" for none).
func newLegacyBackendCluster(t *testing.T, streams string) *modernCluster {
	t.Helper()
	c := newClusterOf(t, testsupport.BackendOptions{Stateless: true, ModernTools: true},
		testsupport.BackendOptions{StreamingTools: true, AskingTools: true})
	if streams != "" {
		cfg, err := readFile(c.config)
		if err != nil {
			t.Fatal(err)
		}
		c.writeConfig("streams:\n" + streams + cfg)
	}
	return startModernCluster(t, c)
}

// capsAsking declares every capability a backend may ask for.
var capsAsking = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

// inputRound is an input_required result: the requests by key, and the
// state to echo.
type inputRound struct {
	requests map[string]string // key -> method
	params   map[string]map[string]any
	state    string
}

// asked reads r as input_required; it fails the test on anything else.
func asked(t *testing.T, r *testsupport.Reply) inputRound {
	t.Helper()
	res := r.Result()
	in := inputRound{requests: map[string]string{}, params: map[string]map[string]any{}}
	in.state, _ = res["requestState"].(string)
	reqs, _ := res["inputRequests"].(map[string]any)
	for k, v := range reqs {
		m, _ := v.(map[string]any)
		in.requests[k], _ = m["method"].(string)
		in.params[k], _ = m["params"].(map[string]any)
	}
	if res["resultType"] != "input_required" || in.state == "" || len(in.requests) == 0 {
		t.Fatalf("want input_required with requests and a state: %d %s", r.Status, r.Body)
	}
	return in
}

// methods lists a round's methods, sorted.
func (in inputRound) methods() []string {
	var out []string
	for _, m := range in.requests {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// keyOf is the key of the round's request of method.
func (in inputRound) keyOf(t *testing.T, method string) string {
	t.Helper()
	for k, m := range in.requests {
		if m == method {
			return k
		}
	}
	t.Fatalf("no %s among %v", method, in.requests)
	return ""
}

// The client's answers to the asking tools' requests.
var (
	answerSampling    = map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "42"}, "model": "m"}
	answerElicitation = map[string]any{"action": "accept", "content": map[string]any{"ok": true}}
	answerRoots       = map[string]any{"roots": []any{map[string]any{"uri": "file:///work", "name": "work"}}}
)

func answerFor(method string) map[string]any {
	switch method {
	case "sampling/createMessage":
		return answerSampling
	case "elicitation/create":
		return answerElicitation
	}
	return answerRoots
}

// answers is what a go-sdk modern client's handlers were asked, in order.
type asks struct {
	mu  sync.Mutex
	got []string
}

func (a *asks) add(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, s)
}

func (a *asks) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// askingClient is a go-sdk client that answers sampling ("reply to
// <prompt>"), elicitation (accept, ok) and roots (file:///work), and
// records what it was asked.
func askingClient(a *asks) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "translation-e2e", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			a.add("sampling: " + prompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "reply to " + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.add("elicitation: " + req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	return c
}

// A go-sdk 2026-07-28 client calls a session backend's tool that asks
// sampling, then elicitation, then sampling, then elicitation: four
// rounds, each retry on another instance than the round before, the
// backend's one call held on the instance that started it throughout.
func TestTranslation_ParkedCallRoundsEachOnAnotherInstance(t *testing.T) {
	m := newLegacyBackendCluster(t, "")
	two := m.backends["gateway-two"]
	a := &asks{}
	cs := m.connect("alice", askingClient(a))
	n, calls := len(m.lb.Forwarded()), two.Count("tools/call")

	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "gateway-two-consult", Arguments: map[string]any{"steps": 4}})
	if err != nil || res.IsError {
		t.Fatalf("consult: %v %+v", err, res)
	}
	const want = "consulted: reply to Question 1? | accept true | reply to Question 3? | accept true"
	if got := res.Content[0].(*mcp.TextContent).Text; got != want {
		t.Fatalf("consult answered %q, want %q", got, want)
	}
	if got, wantAsked := a.list(), []string{"sampling: Question 1?", "elicitation: Step 2: proceed?",
		"sampling: Question 3?", "elicitation: Step 4: proceed?"}; !slices.Equal(got, wantAsked) {
		t.Fatalf("the client was asked %q, want %q", got, wantAsked)
	}
	if got := two.Count("tools/call") - calls; got != 1 {
		t.Fatalf("the backend got %d tools/call, want its one call held across the rounds", got)
	}
	fs := m.forwardedSince(n, "tools/call")
	if len(fs) != 5 {
		t.Fatalf("%d tools/call forwarded, want 5 (the call and four retries)", len(fs))
	}
	for i := 1; i < len(fs); i++ {
		if m.instance(fs[i]) == m.instance(fs[i-1]) {
			t.Fatalf("rounds %d and %d on the same instance: the test proves nothing", i, i+1)
		}
		if p := retryOf(t, fs[i]); p.RequestState == nil || len(p.InputResponses) == 0 {
			t.Fatalf("retry %d carried no state or answers: %s", i, fs[i].Body)
		}
	}
	// A call that ends normally logs no warning (a lease dropped by the
	// call's end under a renewal, a poll cut by its wait's end, were).
	cs.Close()
	for i, g := range m.gws {
		if err := g.Stop(); err != nil {
			t.Fatalf("stopping instance %d: %v", i, err)
		}
		if out := g.Output(); strings.Contains(out, "level=WARN") {
			t.Fatalf("instance %d logged a warning for calls that ended normally:\n%s", i, out)
		}
	}
}

// A backend that asks three things at once (concurrent requests on its
// call's stream) gets them asked in one round; a retry that answers only
// some is asked again for the rest alone (same round), and the backend
// gets every answer once the last arrives, whichever instance each retry
// reaches.
func TestTranslation_SeveralRequestsInOneRoundAndPartialAnswers(t *testing.T) {
	m := newLegacyBackendCluster(t, "")
	alice := m.client("alice")
	call := map[string]any{"name": "gateway-two-ask_all"}
	withState := func(state string, answers map[string]any) map[string]any {
		p := cloneParams(call)
		p["requestState"], p["inputResponses"] = state, answers
		return p
	}
	wantMethods := []string{"elicitation/create", "roots/list", "sampling/createMessage"}
	const wantText = "model=42; user=accept true; roots=file:///work"

	t.Run("all answered in one retry", func(t *testing.T) {
		in := asked(t, alice.ModernRequest(m.gws[0], "tools/call", call, capsAsking))
		if got := in.methods(); !slices.Equal(got, wantMethods) {
			t.Fatalf("one round asked %v, want %v", got, wantMethods)
		}
		all := map[string]any{}
		for k, method := range in.requests {
			all[k] = answerFor(method)
		}
		if got := alice.ModernRequest(m.gws[1], "tools/call", withState(in.state, all), capsAsking).Text(); got != wantText {
			t.Fatalf("the retry answered %q, want %q", got, wantText)
		}
	})

	t.Run("answers spread over three retries", func(t *testing.T) {
		in := asked(t, alice.ModernRequest(m.gws[0], "tools/call", call, capsAsking))
		samplingKey, elicitKey, rootsKey := in.keyOf(t, "sampling/createMessage"), in.keyOf(t, "elicitation/create"), in.keyOf(t, "roots/list")

		// No answer at all: the whole round is asked again, same keys.
		same := asked(t, alice.ModernRequest(m.gws[2], "tools/call", withState(in.state, map[string]any{}), capsAsking))
		if len(same.requests) != 3 || same.requests[samplingKey] == "" || same.requests[elicitKey] == "" || same.requests[rootsKey] == "" {
			t.Fatalf("a retry with no answers was asked %v, want the round's three requests again", same.requests)
		}
		// Sampling only: the other two are asked again, alone.
		again := asked(t, alice.ModernRequest(m.gws[1], "tools/call",
			withState(in.state, map[string]any{samplingKey: answerSampling}), capsAsking))
		if got := again.methods(); !slices.Equal(got, []string{"elicitation/create", "roots/list"}) {
			t.Fatalf("after a partial answer the client was asked %v, want the two unanswered", got)
		}
		if _, ok := again.requests[elicitKey]; !ok {
			t.Fatalf("the re-asked elicitation has a new key: %v (was %s)", again.requests, elicitKey)
		}
		// Elicitation only, as the latest round asked: roots alone remain.
		last := asked(t, alice.ModernRequest(m.gws[2], "tools/call",
			withState(again.state, map[string]any{elicitKey: answerElicitation}), capsAsking))
		if got := last.methods(); !slices.Equal(got, []string{"roots/list"}) {
			t.Fatalf("after the second partial answer the client was asked %v, want roots alone", got)
		}
		if got := alice.ModernRequest(m.gws[0], "tools/call",
			withState(last.state, map[string]any{rootsKey: answerRoots}), capsAsking).Text(); got != wantText {
			t.Fatalf("the last retry answered %q, want %q", got, wantText)
		}
	})
}

// A parked call's requestState is the gateway's signed envelope: altered
// or replayed by another caller, it is refused with -32602 on any
// instance; the previous round's, repeated, is given the current round
// (rounds are idempotent); and the parked call still completes with the
// untouched state of its current round.
func TestTranslation_ParkedCallStateRefusedUnlessCurrentAndUntouched(t *testing.T) {
	m := newLegacyBackendCluster(t, "")
	alice, bob := m.client("alice"), m.client("bob")
	call := map[string]any{"name": "gateway-two-consult", "arguments": map[string]any{"steps": 2}}
	retry := func(state string, answers map[string]any) map[string]any {
		p := cloneParams(call)
		p["requestState"], p["inputResponses"] = state, answers
		return p
	}
	first := asked(t, alice.ModernRequest(m.gws[0], "tools/call", call, capsAsking))
	k1 := first.keyOf(t, "sampling/createMessage")
	second := asked(t, alice.ModernRequest(m.gws[1], "tools/call", retry(first.state, map[string]any{k1: answerSampling}), capsAsking))
	k2 := second.keyOf(t, "elicitation/create")

	payload, sig, _ := strings.Cut(second.state, ".")
	flipped := []byte(payload)
	flipped[len(flipped)/2] ^= 1
	cases := []struct {
		name   string
		client *testsupport.Client
		state  string
		answer map[string]any
		want   string // in the error message
	}{
		{"a tampered signature", alice, second.state + "x", map[string]any{k2: answerElicitation}, "requestState"},
		{"a tampered payload", alice, string(flipped) + "." + sig, map[string]any{k2: answerElicitation}, "requestState"},
		{"another caller", bob, second.state, map[string]any{k2: answerElicitation}, "requestState"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := &testsupport.Client{T: t, Token: tc.client.Token}
			r := cl.ModernRequest(m.gws[i%3], "tools/call", retry(tc.state, tc.answer), capsAsking)
			if e := r.Error(); e == nil || e.Code != -32602 || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("retry answered %d %s, want -32602 naming %q", r.Status, r.Body, tc.want)
			}
		})
	}
	// The previous round's retry again (its answer lost on the way back):
	// rounds are idempotent, so it is given the round it led to, the same
	// request under the same key.
	again := asked(t, alice.ModernRequest(m.gws[0], "tools/call", retry(first.state, map[string]any{k1: answerSampling}), capsAsking))
	if again.keyOf(t, "elicitation/create") != k2 || len(again.requests) != 1 {
		t.Fatalf("the previous round's retry repeated was asked %v, want the current round (%s) again", again.requests, k2)
	}
	calls := m.backends["gateway-two"].Count("tools/call")
	r := alice.ModernRequest(m.gws[2], "tools/call", retry(second.state, map[string]any{k2: answerElicitation}), capsAsking)
	if got := r.Text(); got != "consulted: 42 | accept true" {
		t.Fatalf("the owner's current retry: %s", r.Body)
	}
	// The same retry again (its answer lost on the way back), on another
	// instance: the call's answer again, not a second run of the tool; a
	// retry of an earlier round learns that the call has ended.
	r = alice.ModernRequest(m.gws[0], "tools/call", retry(second.state, map[string]any{k2: answerElicitation}), capsAsking)
	if got := r.Text(); got != "consulted: 42 | accept true" || r.Result()["resultType"] != "complete" {
		t.Fatalf("the retry repeated: %d %s, want the call's answer again", r.Status, r.Body)
	}
	if got := m.backends["gateway-two"].Count("tools/call"); got != calls {
		t.Fatalf("the backend got %d more tools/call, want none", got-calls)
	}
	r = alice.ModernRequest(m.gws[1], "tools/call", retry(first.state, map[string]any{k1: answerSampling}), capsAsking)
	if e := r.Error(); e == nil || e.Code != -32603 || !strings.Contains(e.Message, "has ended") {
		t.Fatalf("a retry of the first round after the end: %d %s, want -32603 saying the call has ended", r.Status, r.Body)
	}
}

// A client whose _meta lacks a capability is never asked for it: the
// backend's request gets -32601 from the gateway, and the tool's own
// outcome (here: it reports the failure) is the client's complete result,
// in one request.
func TestTranslation_ClientLackingTheCapabilityBackendGetsMethodNotFound(t *testing.T) {
	m := newLegacyBackendCluster(t, "")
	two := m.backends["gateway-two"]
	cl := m.client("alice")
	for i, caps := range []any{nil, map[string]any{"elicitation": map[string]any{}}} {
		t.Run(fmt.Sprintf("capabilities %v", caps), func(t *testing.T) {
			calls := two.Count("tools/call")
			r := cl.ModernRequest(m.gws[i%3], "tools/call", map[string]any{"name": "gateway-two-consult", "arguments": map[string]any{"steps": 1}}, caps)
			res := r.Result()
			text := r.Text()
			if res["resultType"] != "complete" || !strings.HasPrefix(text, "step 1 failed (code -32601)") || !strings.Contains(text, "sampling") {
				t.Fatalf("the call answered %s, want complete with the backend's report of -32601 for sampling", r.Body)
			}
			if got := two.Count("tools/call") - calls; got != 1 {
				t.Fatalf("the backend got %d tools/call, want 1", got)
			}
		})
	}
}

// A retry that never comes: once streams.client_request_timeout passes,
// the parked backend call is cancelled (the backend sees its call's
// context end, which no answer would do), rather than left to run until
// the backend's own timeout.
func TestTranslation_ParkedCallCancelledWhenTheRetryNeverComes(t *testing.T) {
	const timeout = 2 * time.Second
	m := newLegacyBackendCluster(t, "  client_request_timeout: 2s\n")
	two := m.backends["gateway-two"]
	start := time.Now()
	in := asked(t, m.client("alice").ModernRequest(m.gws[0], "tools/call",
		map[string]any{"name": "gateway-two-hold", "arguments": map[string]any{"tag": "abandoned"}}, capsAsking))
	if got := in.methods(); !slices.Equal(got, []string{"sampling/createMessage"}) {
		t.Fatalf("asked %v", got)
	}
	select {
	case tag := <-two.Cancelled:
		if tag != "abandoned" {
			t.Fatalf("cancelled %q", tag)
		}
	case <-time.After(timeout + 10*time.Second):
		t.Fatal("the backend call was not cancelled after the client request timeout")
	}
	if d := time.Since(start); d < timeout-100*time.Millisecond {
		t.Fatalf("the call was cancelled after %v, before the client request timeout (%v)", d, timeout)
	}
	select {
	case msg := <-two.AskFailed:
		t.Logf("the backend's request ended with: %s", msg)
	default:
		t.Fatal("the backend's request did not end")
	}
	// A retry that comes after all is told the call has ended, on any
	// instance, once the cancelled call's end is recorded.
	late := map[string]any{"name": "gateway-two-hold", "arguments": map[string]any{"tag": "abandoned"},
		"requestState": in.state, "inputResponses": map[string]any{in.keyOf(t, "sampling/createMessage"): answerSampling}}
	var r *testsupport.Reply
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		r = m.client("alice").ModernRequest(m.gws[1], "tools/call", late, capsAsking)
		e := r.Error()
		return e != nil && e.Code == -32603 && strings.Contains(e.Message, "has ended")
	}) {
		t.Fatalf("a late retry: %d %s, want -32603 saying the call has ended", r.Status, r.Body)
	}
}

// The instance holding a parked call dies: the client's retry on another
// instance gets -32603 saying so, within the call lease, rather than a
// wait or a -32602 that would blame the client.
func TestTranslation_ParkedCallWhoseInstanceDiedEndsWithAClearError(t *testing.T) {
	m := newLegacyBackendCluster(t, "  call_lease: 1s\n")
	alice := m.client("alice")
	call := map[string]any{"name": "gateway-two-consult", "arguments": map[string]any{"steps": 2}}
	in := asked(t, alice.ModernRequest(m.gws[0], "tools/call", call, capsAsking))
	m.gws[0].Kill()

	p := cloneParams(call)
	p["requestState"], p["inputResponses"] = in.state, map[string]any{in.keyOf(t, "sampling/createMessage"): answerSampling}
	start := time.Now()
	r := alice.ModernRequest(m.gws[1], "tools/call", p, capsAsking)
	if e := r.Error(); e == nil || e.Code != -32603 || !strings.Contains(e.Message, "stopped before it answered") {
		t.Fatalf("retry after the holder died: %d %s, want -32603 saying the instance stopped", r.Status, r.Body)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the error took %v", d)
	}
	// Again, on the third instance: the same answer, at once.
	if e := alice.ModernRequest(m.gws[2], "tools/call", p, capsAsking).Error(); e == nil || e.Code != -32603 {
		t.Fatalf("second retry: %+v", e)
	}
}

// subscriptions/listen takes in a session backend through its GET stream:
// a resource subscribed by the listen on one instance hears an update
// caused through another. The backend's log messages go only to the
// request that caused them, on its own stream and at its logLevel, never
// to the listen.
func TestTranslation_LegacyBackendUpdatesReachListensAndLogsOnlyTheirRequest(t *testing.T) {
	m := newLegacyBackendCluster(t, "")
	two := m.backends["gateway-two"]
	cl := m.client("alice")
	gets := two.Count("GET")
	s := cl.ModernStream(m.gws[0], "watch", "subscriptions/listen", map[string]any{"notifications": map[string]any{
		"resourceSubscriptions": []string{"gateway-two-test://counter"}}}, nil)
	ack := decodeNote(t, s.Next())
	if ack.Method != "notifications/subscriptions/acknowledged" || !slices.Equal(ack.Params.Notifications.ResourceSubscriptions, []string{"gateway-two-test://counter"}) {
		t.Fatalf("first event %+v, want the acknowledgement of the counter", ack)
	}
	if !two.WaitCount("GET", gets+1, 15*time.Second) {
		t.Fatal("no GET stream opened on the session backend")
	}

	for i, level := range []string{"info", ""} {
		t.Run(fmt.Sprintf("logLevel %q", level), func(t *testing.T) {
			params := map[string]any{"name": "gateway-two-increment"}
			if level != "" {
				params["_meta"] = map[string]any{"io.modelcontextprotocol/logLevel": level}
			}
			r := cl.ModernRequest(m.gws[1+i], "tools/call", params, nil)
			var logs, others []string
			for _, msg := range r.Messages {
				switch {
				case msg.Method == "notifications/message":
					logs = append(logs, string(msg.Params))
				case msg.Method != "":
					others = append(others, msg.Method)
				}
			}
			if wantLogs := map[bool]int{true: 1, false: 0}[level != ""]; len(logs) != wantLogs || len(others) != 0 {
				t.Fatalf("the call's stream carried logs %v and %v: want %d log message and nothing else", logs, others, wantLogs)
			}
			if level != "" && !strings.Contains(logs[0], "counter incremented") {
				t.Fatalf("log message %s", logs[0])
			}
			up := decodeNote(t, s.Next())
			if up.Method != "notifications/resources/updated" || up.Params.URI != "gateway-two-test://counter" ||
				string(up.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != `"watch"` {
				t.Fatalf("the listen heard %+v, want the counter's update tagged watch (and no log message)", up)
			}
		})
	}
	if _, ok := s.NextWithin(300 * time.Millisecond); ok {
		t.Fatal("the listen heard something more")
	}
}
