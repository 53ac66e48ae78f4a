package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askingClient is a 2025-era client's side of a call, as the session
// runtime would carry it: it answers every elicitation by accepting the
// content answer returns for the request's message (or fails it when
// fail is set), and records what it was asked.
type askingClient struct {
	answer func(message string) map[string]any
	fail   bool

	mu    sync.Mutex
	asked []string
}

func (a *askingClient) AskClient(_ context.Context, _ *router.Call, req *jsonrpc.Request) *jsonrpc.Response {
	var p struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(req.Params, &p)
	a.mu.Lock()
	a.asked = append(a.asked, req.Method+": "+p.Message)
	a.mu.Unlock()
	if a.fail {
		return &jsonrpc.Response{Error: &jsonrpc.Error{Code: -1, Message: "the user closed the dialog"}}
	}
	raw, _ := json.Marshal(map[string]any{"action": "accept", "content": a.answer(p.Message)})
	return &jsonrpc.Response{Result: raw}
}

func (a *askingClient) ListenersChanged(context.Context, store.SessionID) {}

func (a *askingClient) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// discardStream is a call's event stream whose client reads nothing.
type discardStream struct{}

func (discardStream) Send(jsonrpc.Message) error { return nil }

// fulfilFixture is a vhost over one stateless go-sdk backend that speaks
// 2026-07-28 and asks for input with input_required.
func fulfilFixture(t *testing.T) (*fixture, *testsupport.Backend) {
	t.Helper()
	f := newFixture(t, backendSpec{Key: "modern", Opts: testsupport.BackendOptions{Stateless: true, ModernTools: true}})
	return f, f.Backends["modern"]
}

// callAs2025 calls tool name of a 2025 session whose client declared caps,
// with client answering the input requests.
func callAs2025(t *testing.T, f *fixture, caps string, client router.SessionRuntime, name string) *jsonrpc.Response {
	t.Helper()
	sid := f.InitCaps(caps)
	sess := f.Instance.Load(t, sid)
	raw, _ := json.Marshal(map[string]any{"name": name, "arguments": map[string]any{}})
	return f.Router.Handle(context.Background(), &router.Call{Caller: &router.SessionCaller{Session: sess, Runtime: client}, Header: map[string][]string{}, Stream: discardStream{},
		Request: &jsonrpc.Request{ID: mustID(9), Method: "tools/call", Params: raw}})
}

// The backend asks twice, each time with a new requestState; the gateway
// asks the 2025 client and calls again with the answers and the state the
// backend gave last (the backend refuses a state it never issued, and a
// round without its answer), so the result proves retryParams replaced
// both.
func TestInputFulfil_RoundsCarryAnswersAndLatestState(t *testing.T) {
	f, b := fulfilFixture(t)
	client := &askingClient{answer: func(msg string) map[string]any {
		if strings.Contains(msg, "name") {
			return map[string]any{"name": "Ada"}
		}
		return map[string]any{"color": "green"}
	}}
	res := result(t, callAs2025(t, f, `{"elicitation":{}}`, client, "interview"))
	if got := text(t, res); got != "Ada likes green" {
		t.Fatalf("interview answered %q, want %q", got, "Ada likes green")
	}
	if rt, ok := res["resultType"]; ok && rt != "complete" {
		t.Fatalf("a 2025 client got resultType %v", rt)
	}
	if q := client.questions(); len(q) != 2 || !strings.HasPrefix(q[0], "elicitation/create: Step 1") || !strings.HasPrefix(q[1], "elicitation/create: Step 2") {
		t.Fatalf("the client was asked %q, want step 1 then step 2", q)
	}
	if n := b.Rounds("interview"); n != 3 {
		t.Fatalf("the backend served %d rounds, want 3", n)
	}
}

// A client that did not declare elicitation is never asked: the call
// fails naming the capability, and the backend is not called again.
func TestInputFulfil_UndeclaredCapabilityFailsTheCall(t *testing.T) {
	f, b := fulfilFixture(t)
	client := &askingClient{answer: func(string) map[string]any { return map[string]any{"name": "Ada"} }}
	e := rpcErr(t, callAs2025(t, f, `{}`, client, "greet"))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, `"elicitation"`) {
		t.Fatalf("got %d %q, want -32603 naming the elicitation capability", e.Code, e.Message)
	}
	if q := client.questions(); len(q) != 0 {
		t.Fatalf("the client was asked %q though it declared no elicitation", q)
	}
	if n := b.Rounds("greet"); n != 1 {
		t.Fatalf("the backend served %d rounds, want 1", n)
	}
}

// A client's answer that is an error fails the call: the backend gets no
// partial answer.
func TestInputFulfil_ErrorAnswerFailsTheCall(t *testing.T) {
	f, b := fulfilFixture(t)
	client := &askingClient{fail: true}
	e := rpcErr(t, callAs2025(t, f, `{"elicitation":{}}`, client, "greet"))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, "the user closed the dialog") {
		t.Fatalf("got %d %q, want -32603 carrying the client's error", e.Code, e.Message)
	}
	if n := b.Rounds("greet"); n != 1 {
		t.Fatalf("the backend served %d rounds, want 1: no retry after a failed answer", n)
	}
}

// A backend that never stops asking is stopped after maxInputRounds (10)
// rounds; one that keeps asking to retry later (input_required with no
// input requests) after maxRetryLaters (3) retries.
func TestInputFulfil_RoundsAreBounded(t *testing.T) {
	f, b := fulfilFixture(t)
	var mu sync.Mutex
	calls := map[string]int{}
	count := func(name string) int { mu.Lock(); defer mu.Unlock(); return calls[name] }
	mcp.AddTool(b.Server, &mcp.Tool{Name: "forever", Description: "Always asks again."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			calls["forever"]++
			mu.Unlock()
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"again": &mcp.ElicitParams{Message: "again?",
				RequestedSchema: map[string]any{"type": "object"}}}}, nil, nil
		})
	mcp.AddTool(b.Server, &mcp.Tool{Name: "busy", Description: "Always asks to retry later."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			calls["busy"]++
			mu.Unlock()
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: "later"}, nil, nil
		})
	client := &askingClient{answer: func(string) map[string]any { return map[string]any{} }}

	e := rpcErr(t, callAs2025(t, f, `{"elicitation":{}}`, client, "forever"))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, "more than 10 times") {
		t.Fatalf("forever: got %d %q, want -32603 on the round bound", e.Code, e.Message)
	}
	if n := count("forever"); n != 10 {
		t.Fatalf("forever was called %d times, want 10", n)
	}
	if q := client.questions(); len(q) != 9 {
		t.Fatalf("the client was asked %d times, want 9", len(q))
	}

	e = rpcErr(t, callAs2025(t, f, `{"elicitation":{}}`, client, "busy"))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, "retry later 3 times") {
		t.Fatalf("busy: got %d %q, want -32603 on the retry-later bound", e.Code, e.Message)
	}
	if n := count("busy"); n != 4 {
		t.Fatalf("busy was called %d times, want 4 (the first and 3 retries)", n)
	}
	if q := client.questions(); len(q) != 9 {
		t.Fatalf("a retry-later round asked the client: %d questions", len(q))
	}
}

// Each retry carries only the round's answers and the backend's latest
// requestState: a state the backend stopped giving is dropped, not
// resent, and the previous round's answers are not resent either.
func TestInputFulfil_RetryReplacesStateAndAnswers(t *testing.T) {
	f, b := fulfilFixture(t)
	var mu sync.Mutex
	var seen []string
	mcp.AddTool(b.Server, &mcp.Tool{Name: "shifting", Description: "A state, then none."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			keys := make([]string, 0, len(req.Params.InputResponses))
			for k := range req.Params.InputResponses {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			mu.Lock()
			seen = append(seen, fmt.Sprintf("state=%q answers=%v", req.Params.RequestState, keys))
			round := len(seen)
			mu.Unlock()
			ask := func(k string) mcp.InputRequestMap {
				return mcp.InputRequestMap{k: &mcp.ElicitParams{Message: k, RequestedSchema: map[string]any{"type": "object"}}}
			}
			switch round {
			case 1:
				return &mcp.CallToolResult{InputRequests: ask("first"), RequestState: "s1"}, nil, nil
			case 2:
				return &mcp.CallToolResult{InputRequests: ask("second")}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	client := &askingClient{answer: func(string) map[string]any { return map[string]any{} }}
	if got := text(t, result(t, callAs2025(t, f, `{"elicitation":{}}`, client, "shifting"))); got != "done" {
		t.Fatalf("shifting answered %q", got)
	}
	want := []string{`state="" answers=[]`, `state="s1" answers=[first]`, `state="" answers=[second]`}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Fatalf("the backend saw rounds %q, want %q", seen, want)
	}
}
