package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// The bounds on what one principal can make the 2026-07-28 surface hold
// (docs/reference/limits.md), across instances on one Redis: parked calls counted
// fleet-wide and freed by every ending, listens per instance, the size of
// one listen; and a parked call waits for a person, not for the backend's
// timeout.

// newBoundsCluster is newLegacyBackendCluster with head (top-level YAML
// sections) before the config, and gateway-two (the session backend with
// the asking tools) given backendTimeout.
func newBoundsCluster(t *testing.T, head, backendTimeout string) *modernCluster {
	t.Helper()
	c := newClusterOf(t, testsupport.BackendOptions{Stateless: true, ModernTools: true},
		testsupport.BackendOptions{StreamingTools: true, AskingTools: true})
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	two := "        url: " + c.backends["gateway-two"].URL + "\n"
	if !strings.Contains(cfg, two) {
		t.Fatalf("gateway-two's url not in the config:\n%s", cfg)
	}
	if backendTimeout != "" {
		cfg = strings.Replace(cfg, two, two+"        timeout: "+backendTimeout+"\n", 1)
	}
	c.writeConfig(head + cfg)
	return startModernCluster(t, c)
}

// hold parks a "hold" call (it asks for sampling) of cl on ep.
func hold(cl *testsupport.Client, ep testsupport.Endpoint, tag string) *testsupport.Reply {
	return cl.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-hold", "arguments": map[string]any{"tag": tag}}, capsAsking)
}

// wantOverParkBound checks r is the refusal of a call over
// parked_calls_per_principal.
func wantOverParkBound(t *testing.T, r *testsupport.Reply) {
	t.Helper()
	e := r.Error()
	if r.Status != 429 || e == nil || e.Code != -32029 || !strings.Contains(e.Message, "limits.parked_calls_per_principal") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a call over the bound: %d %s (Retry-After %q), want 429 -32029 naming limits.parked_calls_per_principal, with Retry-After",
			r.Status, r.Body, r.Header.Get("Retry-After"))
	}
}

// parks reports whether r is a parked call's first input_required.
func parks(r *testsupport.Reply) bool {
	return r.Status == 200 && r.Error() == nil && r.Result()["resultType"] == "input_required"
}

// retryHold answers in's sampling request.
func retryHold(t *testing.T, cl *testsupport.Client, ep testsupport.Endpoint, tag string, in inputRound) *testsupport.Reply {
	return cl.ModernRequest(ep, "tools/call", map[string]any{"name": "gateway-two-hold", "arguments": map[string]any{"tag": tag},
		"requestState": in.state, "inputResponses": map[string]any{in.keyOf(t, "sampling/createMessage"): answerSampling}}, capsAsking)
}

func TestBounds_ParkedCallsPerPrincipalHoldAcrossInstancesAndFreeOnEveryEnding(t *testing.T) {
	m := newBoundsCluster(t, "limits:\n  parked_calls_per_principal: 2\nstreams:\n  client_request_timeout: 3s\n  call_lease: 1s\n", "1s")
	two := m.backends["gateway-two"]
	alice, bob := m.client("alice"), m.client("bob")
	// Every call refused at the bound had started at the backend (it is
	// refused when it first asks) and ends there: the hold tool reports
	// each on channels of 16. Drained here so the polls below can try
	// as often as they need.
	cancelled := make(chan string, 1000)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case tag := <-two.Cancelled:
				cancelled <- tag
			case <-two.AskFailed:
			case <-m.t.Context().Done():
				return
			}
		}
	}()
	t.Cleanup(func() { <-drained })

	a1 := asked(t, hold(alice, m.gws[0], "a1"))
	a2 := asked(t, hold(alice, m.gws[1], "a2"))
	calls := two.Count("tools/call")
	wantOverParkBound(t, hold(alice, m.gws[2], "a3"))
	// Not parked, so not held: the backend call it started was cancelled.
	select {
	case tag := <-cancelled:
		if tag != "a3" {
			t.Fatalf("cancelled %q, want the refused a3", tag)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refused call was not cancelled at the backend")
	}
	if got := two.Count("tools/call") - calls; got != 1 {
		t.Fatalf("the refused call made %d backend calls, want the one that asked", got)
	}
	if !parks(hold(bob, m.gws[2], "b1")) {
		t.Fatal("bob's call was refused by alice's bound")
	}

	t.Run("answered, after the backend's timeout", func(t *testing.T) {
		// The backend's timeout (1s) bounds each exchange with it, not the
		// person answering: a1 has waited longer than that.
		time.Sleep(1500 * time.Millisecond)
		r := retryHold(t, alice, m.gws[2], "a1", a1)
		if got := r.Text(); got != "model said: 42" {
			t.Fatalf("a1 answered after 1.5s: %d %s, want the tool's answer", r.Status, r.Body)
		}
		var r3 *testsupport.Reply
		if !testsupport.Eventually(t, 5*time.Second, func() bool { r3 = hold(alice, m.gws[0], "a3"); return parks(r3) }) {
			t.Fatalf("after a1 was answered a new call is still refused: %d %s", r3.Status, r3.Body)
		}
	})

	t.Run("expired, told why", func(t *testing.T) {
		// a2 and a3 are parked (and bob's b1); nobody answers them within 3s.
		for waiting := map[string]bool{"a2": true, "a3": true}; len(waiting) > 0; {
			select {
			case tag := <-cancelled:
				delete(waiting, tag)
			case <-time.After(15 * time.Second):
				t.Fatalf("unanswered parked calls %v were not cancelled after client_request_timeout", waiting)
			}
		}
		var r *testsupport.Reply
		if !testsupport.Eventually(t, 10*time.Second, func() bool { r = hold(alice, m.gws[1], "a4"); return parks(r) }) {
			t.Fatalf("after two calls expired a new one is still refused: %d %s", r.Status, r.Body)
		}
		late := retryHold(t, alice, m.gws[2], "a2", a2)
		if e := late.Error(); e == nil || e.Code != -32603 || !strings.Contains(e.Message, "has ended") || !strings.Contains(e.Message, "client_request_timeout") {
			t.Fatalf("a late answer to an expired call: %d %s, want -32603 saying it ended and why", late.Status, late.Body)
		}
	})

	t.Run("its instance gone", func(t *testing.T) {
		// alice has a4 (on gws[1]); one more on gws[1] reaches the bound.
		if !parks(hold(alice, m.gws[1], "a5")) {
			t.Fatal("a5 refused")
		}
		wantOverParkBound(t, hold(alice, m.gws[0], "a6"))
		m.gws[1].Kill()
		var r *testsupport.Reply
		if !testsupport.Eventually(t, 15*time.Second, func() bool { r = hold(alice, m.gws[0], "a7"); return parks(r) }) {
			t.Fatalf("the slots of a killed instance's calls never lapsed: %d %s", r.Status, r.Body)
		}
	})
}

// A retry whose connection drops, at whatever point, loses nothing: the
// same retry repeated gets the call's next round (the same requests) or
// its answer, never "moved on".
func TestBounds_RepeatedRetryAfterADroppedConnection(t *testing.T) {
	m := newBoundsCluster(t, "", "")
	alice := m.client("alice")
	call := map[string]any{"name": "gateway-two-consult", "arguments": map[string]any{"steps": 3}}
	retry := func(state string, answers map[string]any) map[string]any {
		p := cloneParams(call)
		p["requestState"], p["inputResponses"] = state, answers
		return p
	}
	first := asked(t, alice.ModernRequest(m.gws[0], "tools/call", call, capsAsking))
	answers := map[string]any{first.keyOf(t, "sampling/createMessage"): answerSampling}

	// The retry is sent and its connection dropped at once: its answers
	// may or may not have reached the call.
	alice.DropAfterSending(m.gws[1], "tools/call", retry(first.state, answers), capsAsking)
	second := asked(t, alice.ModernRequest(m.gws[2], "tools/call", retry(first.state, answers), capsAsking))
	if got := second.methods(); !slices.Equal(got, []string{"elicitation/create"}) {
		t.Fatalf("the repeated retry was asked %v, want the call's second round", got)
	}
	// Delivered and answered this time: the same retry once more gets the
	// same round again, same key, on another instance.
	again := asked(t, alice.ModernRequest(m.gws[0], "tools/call", retry(first.state, answers), capsAsking))
	if !maps2Equal(again.requests, second.requests) {
		t.Fatalf("the retry repeated once more was asked %v, want the same round %v", again.requests, second.requests)
	}
	answers2 := map[string]any{second.keyOf(t, "elicitation/create"): answerElicitation}
	third := asked(t, alice.ModernRequest(m.gws[1], "tools/call", retry(again.state, answers2), capsAsking))
	final := retry(third.state, map[string]any{third.keyOf(t, "sampling/createMessage"): answerSampling})
	const want = "consulted: 42 | accept true | 42"
	if got := alice.ModernRequest(m.gws[2], "tools/call", final, capsAsking).Text(); got != want {
		t.Fatalf("the last round answered %q, want %q", got, want)
	}
	if got := alice.ModernRequest(m.gws[0], "tools/call", final, capsAsking).Text(); got != want {
		t.Fatalf("the last round repeated answered %q, want the call's answer again", got)
	}
	if e := alice.ModernRequest(m.gws[1], "tools/call", retry(first.state, answers), capsAsking).Error(); e == nil || !strings.Contains(e.Message, "ended") {
		t.Fatalf("a retry of the first round after the call ended: %+v, want 'has ended'", e)
	}
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Listens: at most listens_per_principal open per principal on one
// instance (429 -32029 with Retry-After, freed as soon as one closes,
// others unaffected), at most listen_uris URIs in one (400 -32602 before
// any backend work).
func TestBounds_ListensPerPrincipalAndURIsPerListen(t *testing.T) {
	m := newBoundsCluster(t, "limits:\n  listens_per_principal: 2\n  listen_uris: 3\n", "")
	alice, bob := m.client("alice"), m.client("bob")
	listen := func(id any, uris ...string) map[string]any {
		return map[string]any{"notifications": map[string]any{"toolsListChanged": true, "resourceSubscriptions": uris}}
	}
	open := func(cl *testsupport.Client, ep testsupport.Endpoint, id string) *testsupport.SSEStream {
		s := cl.ModernStream(ep, id, "subscriptions/listen", listen(id), nil)
		if ack := decodeNote(t, s.Next()); ack.Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("listen %s: first event %+v, want the acknowledgement", id, ack)
		}
		return s
	}
	s1 := open(alice, m.gws[0], "l1")
	open(alice, m.gws[0], "l2")
	over := alice.ModernStreamReply(m.gws[0], "l3", "subscriptions/listen", listen("l3"), nil)
	if e := over.Error(); over.Status != 429 || e == nil || e.Code != -32029 || !strings.Contains(e.Message, "limits.listens_per_principal") || over.Header.Get("Retry-After") == "" {
		t.Fatalf("a third listen: %d %s, want 429 -32029 naming limits.listens_per_principal, with Retry-After", over.Status, over.Body)
	}
	open(bob, m.gws[0], "b1")   // another principal
	open(alice, m.gws[1], "l4") // another instance
	s1.Close()
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		r := alice.ModernStreamReply(m.gws[0], "l5", "subscriptions/listen", listen("l5"), nil)
		return r.Status == 200
	}) {
		t.Fatal("a closed listen's place was not freed within 5s")
	}

	two := m.backends["gateway-two"]
	subs := two.Count("resources/subscribe")
	uris := []string{"gateway-two-a://1", "gateway-two-a://2", "gateway-two-a://3", "gateway-two-a://4"}
	r := bob.ModernStreamReply(m.gws[2], "big", "subscriptions/listen", listen("big", uris...), nil)
	if e := r.Error(); r.Status != 400 || e == nil || e.Code != -32602 || !strings.Contains(e.Message, "limits.listen_uris") {
		t.Fatalf("a listen of 4 URIs over a bound of 3: %d %s, want 400 -32602 naming limits.listen_uris", r.Status, r.Body)
	}
	if got := two.Count("resources/subscribe") - subs; got != 0 {
		t.Fatalf("the refused listen made %d backend subscriptions", got)
	}
	// Duplicates count once: five entries of three URIs is within it.
	dup := append(slices.Clone(uris[:3]), uris[0], uris[1])
	open2 := bob.ModernStream(m.gws[2], "dups", "subscriptions/listen", listen("dups", dup...), nil)
	if ack := decodeNote(t, open2.Next()); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("a listen of duplicated URIs: %+v", ack)
	}
}

// A flood of 2,000 listens from one token on one instance: eight are
// held (the default bound), the rest refused at once with 429, and the
// instance goes on serving other clients, listens included.
func TestBounds_ListenFloodFromOneTokenLeavesTheInstanceServing(t *testing.T) {
	m := newBoundsCluster(t, "", "")
	token := m.token("mallory")
	body := func(i int) string {
		b, _ := json.Marshal(testsupport.ModernMessage(fmt.Sprintf("flood-%d", i), "subscriptions/listen",
			map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil))
		return string(b)
	}
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 64, MaxIdleConnsPerHost: 64}}
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		held     []io.Closer
	)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range 2000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, mcpURL(m.gws[0].URL), strings.NewReader(body(i)))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			for k, v := range testsupport.ModernHeaders("subscriptions/listen", nil) {
				req.Header.Set(k, v)
			}
			res, err := hc.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[-1]++
				return
			}
			statuses[res.StatusCode]++
			if res.StatusCode == http.StatusOK {
				held = append(held, res.Body) // kept open: the listen goes on
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	if statuses[http.StatusOK] != 8 || statuses[http.StatusTooManyRequests] != 1992 {
		t.Fatalf("2,000 listens of one token on one instance: statuses %v, want 8 held and 1992 refused with 429", statuses)
	}
	bob := m.client("bob")
	if got := bob.ModernRequest(m.gws[0], "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "still here"}}, nil).Text(); !strings.Contains(got, "still here") {
		t.Fatalf("another client's call during the flood: %q", got)
	}
	s := bob.ModernStream(m.gws[0], "bob", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if ack := decodeNote(t, s.Next()); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("another client's listen during the flood: %+v", ack)
	}
}
