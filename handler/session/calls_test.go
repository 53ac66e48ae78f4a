package session_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// recStream records what a call sends the client; onSend, if set, sees
// each message as it is sent (e.g. to answer a sampling request).
type recStream struct {
	mu     sync.Mutex
	msgs   []jsonrpc.Message
	onSend func(jsonrpc.Message)
}

func (s *recStream) Send(m jsonrpc.Message) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	fn := s.onSend
	s.mu.Unlock()
	if fn != nil {
		fn(m)
	}
	return nil
}

// notifications returns the params of every notification with method.
func (s *recStream) notifications(method string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, m := range s.msgs {
		if r, ok := m.(*jsonrpc.Request); ok && !r.IsCall() && r.Method == method {
			var p map[string]any
			_ = json.Unmarshal(r.Params, &p)
			out = append(out, p)
		}
	}
	return out
}

const capsAll = `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`

func TestProgress_TokensMappedBackAndKeptApart(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(`{}`)
	tokens := []any{"tok-a", 7}
	streams := make([]*recStream, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		streams[i] = &recStream{}
		wg.Go(func() {
			resp := handle(t, f.Instance, sid, mustID(100+i), "tools/call", map[string]any{
				"name": "gateway-one-progress", "arguments": map[string]any{"steps": 3, "stray": true},
				"_meta": map[string]any{"progressToken": tok}}, streams[i])
			if resp.Error != nil {
				t.Errorf("call %d: %v", i, resp.Error)
			}
		})
	}
	wg.Wait()
	for i, tok := range tokens {
		got := streams[i].notifications("notifications/progress")
		if len(got) != 3 {
			t.Fatalf("call %d got %d progress notifications, want 3 (stray token dropped): %v", i, len(got), got)
		}
		want, _ := json.Marshal(tok)
		for _, p := range got {
			if have, _ := json.Marshal(p["progressToken"]); string(have) != string(want) {
				t.Fatalf("call %d saw token %s, want %s", i, have, want)
			}
		}
	}
}

// progressHook rewrites progress messages, or drops them.
type progressHook struct{ deny bool }

func (progressHook) Pre(context.Context, *hook.Call) error { return nil }
func (progressHook) Post(_ context.Context, _ *hook.Call, r json.RawMessage) (json.RawMessage, error) {
	return r, nil
}
func (h progressHook) Progress(_ context.Context, c *hook.Call, params json.RawMessage) (json.RawMessage, error) {
	if h.deny {
		return nil, &hook.Denial{Code: -32000, Message: "no progress for you"}
	}
	var p map[string]any
	_ = json.Unmarshal(params, &p)
	p["message"] = "rewritten for " + c.Name
	return json.Marshal(p)
}

func TestProgress_PassesThePostHook(t *testing.T) {
	for _, deny := range []bool{false, true} {
		f := streamingFixture(t, options{Router: router.Options{Hooks: []hook.Hook{progressHook{deny: deny}}}})
		sid := f.InitCaps(`{}`)
		s := &recStream{}
		resp := handle(t, f.Instance, sid, mustID(1), "tools/call", map[string]any{
			"name": "gateway-two-progress", "arguments": map[string]any{"steps": 2}, "_meta": map[string]any{"progressToken": "p"}}, s)
		if resp.Error != nil {
			t.Fatal(resp.Error)
		}
		got := s.notifications("notifications/progress")
		if deny {
			if len(got) != 0 {
				t.Fatalf("denied progress was forwarded: %v", got)
			}
			continue
		}
		if len(got) != 2 || got[0]["message"] != "rewritten for progress" {
			t.Fatalf("progress not rewritten by the hook: %v", got)
		}
	}
}

func TestCancel_BeforeTheRequestArrivesIsNotLost(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(`{}`)
	f.Notify(t, sid, "notifications/cancelled", map[string]any{"requestId": 42, "reason": "changed my mind"})
	resp := handle(t, f.Instance, sid, mustID(42), "tools/call", map[string]any{"name": "gateway-one-block", "arguments": map[string]any{"tag": "early"}}, nil)
	if e := rpcErr(t, resp); e.Code != router.CodeRequestCancelled {
		t.Fatalf("got %d %q, want the cancelled answer", e.Code, e.Message)
	}
	if n := f.Backends["gateway-one"].Count("tools/call"); n != 0 {
		t.Fatalf("a cancelled request reached the backend %d times", n)
	}
	// The mark was consumed: the same id can be used again.
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if len(sess.Cancelled) != 0 {
		t.Fatalf("cancel mark left behind: %v", sess.Cancelled)
	}
}

func TestCancel_ReachesTheInstanceRunningTheCall(t *testing.T) {
	f := streamingFixture(t, options{})
	other := f.NewInstance(options{})
	sid := f.InitCaps(`{}`)
	done := make(chan *jsonrpc.Response, 1)
	go func() {
		done <- handle(t, f.Instance, sid, mustID(5), "tools/call", map[string]any{"name": "gateway-one-block", "arguments": map[string]any{"tag": "x"}}, nil)
	}()
	b := f.Backends["gateway-one"]
	<-b.Started
	other.Notify(t, sid, "notifications/cancelled", map[string]any{"requestId": 5})
	select {
	case tag := <-b.Cancelled:
		if tag != "x" {
			t.Fatalf("wrong call cancelled: %q", tag)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend never saw the cancellation")
	}
	if e := rpcErr(t, <-done); e.Code != router.CodeRequestCancelled {
		t.Fatalf("got %d %q", e.Code, e.Message)
	}
}

func TestServerRequests_AnsweredThroughAnotherInstance(t *testing.T) {
	f := streamingFixture(t, options{})
	other := f.NewInstance(options{})
	sid := f.InitCaps(capsAll)
	answers := map[string]string{
		"sampling/createMessage": `{"role":"assistant","content":{"type":"text","text":"forty-two"},"model":"m"}`,
		"elicitation/create":     `{"action":"accept","content":{"ok":true}}`,
		"roots/list":             `{"roots":[{"uri":"file:///work","name":"work"}]}`,
	}
	args := map[string]map[string]any{"sample": {"prompt": "q"}, "confirm": {"question": "ok?"}, "roots": {}}
	for tool, want := range map[string]string{"sample": "model said: forty-two", "confirm": "user chose accept", "roots": "roots: file:///work"} {
		t.Run(tool, func(t *testing.T) {
			s := &recStream{}
			s.onSend = func(m jsonrpc.Message) {
				req, ok := m.(*jsonrpc.Request)
				if !ok || !req.IsCall() {
					return
				}
				if !strings.HasPrefix(req.ID.Raw().(string), "mcpgw-s-") {
					t.Errorf("server request id %v is not gateway-issued", req.ID.Raw())
				}
				sess, err := f.Store.LoadSession(context.Background(), sid, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if err := other.Sessions.Deliver(context.Background(), sess, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(answers[req.Method])}); err != nil {
					t.Errorf("deliver: %v", err)
				}
			}
			res := result(t, handle(t, f.Instance, sid, mustID(9), "tools/call", map[string]any{"name": "gateway-two-" + tool, "arguments": args[tool]}, s))
			if got := text(t, res); !strings.HasPrefix(got, want) {
				t.Fatalf("tool said %q, want %q", got, want)
			}
		})
	}
	// Nothing is left pending.
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if len(sess.Pending) != 0 {
		t.Fatalf("pending requests left: %v", sess.Pending)
	}
	if err := other.Sessions.Deliver(t.Context(), sess, &jsonrpc.Response{ID: mustStringID("mcpgw-s-nobody"), Result: json.RawMessage(`{}`)}); err != session.ErrNoPendingRequest {
		t.Fatalf("response for an unknown id: %v", err)
	}
}

func TestServerRequests_RefusedWithoutCapabilityOrStream(t *testing.T) {
	f := streamingFixture(t, options{})
	noCaps := f.InitCaps(`{}`)
	res := result(t, handle(t, f.Instance, noCaps, mustID(1), "tools/call", map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "q"}}, &recStream{}))
	if got := text(t, res); !strings.Contains(got, "sampling failed") || !strings.Contains(got, "sampling") {
		t.Fatalf("without the capability: %q", got)
	}
	withCaps := f.InitCaps(capsAll)
	res = result(t, handle(t, f.Instance, withCaps, mustID(2), "tools/call", map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "q"}}, nil))
	if got := text(t, res); !strings.Contains(got, "event stream") {
		t.Fatalf("without a stream: %q", got)
	}
}

func mustStringID(s string) jsonrpc.ID {
	id, err := jsonrpc.MakeID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func TestServerRequests_ClientThatNeverAnswersTimesOutClearly(t *testing.T) {
	f := streamingFixture(t, options{Sessions: session.Options{ClientRequestTimeout: 200 * time.Millisecond}})
	sid := f.InitCaps(capsAll)
	res := result(t, handle(t, f.Instance, sid, mustID(1), "tools/call", map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "q"}}, &recStream{}))
	if got := text(t, res); !strings.Contains(got, "did not answer sampling/createMessage within 200ms") {
		t.Fatalf("tool saw %q, want a clear timeout", got)
	}
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if len(sess.Pending) != 0 {
		t.Fatalf("timed-out request still pending: %v", sess.Pending)
	}
}

// An answer whose broadcast never reaches the waiting instance (pub/sub is
// at most once) is still found: it was stored in the session with the
// broadcast, and the waiter polls for it.
func TestServerRequests_AnswerWhoseBroadcastIsLostStillArrives(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(capsAll)
	s := &recStream{}
	s.onSend = func(m jsonrpc.Message) {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return
		}
		raw := req.ID.Raw().(string)
		key := strconv.Quote(raw) // the router's key for a string id
		data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": raw,
			"result": json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"lost"},"model":"m"}`)})
		// Addressed to an instance that does not exist: the waiter never
		// gets the message, as if the bus had dropped it.
		msg := store.BusMessage{Kind: store.BusResponse, Session: sid, ID: key, Data: data, To: "nobody"}
		if err := f.Store.PostAnswer(context.Background(), sid, store.ServerRequestID(key), data, msg, time.Hour); err != nil {
			t.Errorf("post answer: %v", err)
		}
	}
	res := result(t, handle(t, f.Instance, sid, mustID(1), "tools/call",
		map[string]any{"name": "gateway-one-sample", "arguments": map[string]any{"prompt": "q"}}, s))
	if got := text(t, res); !strings.HasPrefix(got, "model said: lost") {
		t.Fatalf("tool said %q", got)
	}
}
