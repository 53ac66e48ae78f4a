package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// answerLater answers the backend's elicitation after delay, as a person
// would; with await, the call is told it waits on the client meanwhile.
func answerLater(t *testing.T, conn *Conn, delay time.Duration, await bool) func(jsonrpc.Message) {
	return func(msg jsonrpc.Message) {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "elicitation/create" {
			return
		}
		release := func() {}
		if await {
			var err error
			if release, err = conn.AwaitClient(); err != nil {
				t.Errorf("AwaitClient: %v", err)
				return
			}
		}
		go func() {
			defer release()
			time.Sleep(delay) // the person thinking is what is tested
			_ = conn.Reply(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{"ok":true}}`)})
		}()
	}
}

// The backend's timeout bounds the backend, not the person answering it:
// a call whose elicitation is answered after longer than the timeout
// completes when it waited on the client, and times out when it did not.
func TestConn_BackendTimeoutStopsWhileTheCallWaitsOnTheClient(t *testing.T) {
	// 3 s, not less: the timeout also bounds a process's start and
	// initialize, which a loaded machine (-race) can stretch past 1 s.
	cfg := stdioConfig(t, PoolConfig{Max: 2})
	cfg.Timeout = 3 * time.Second
	c := New(cfg)
	t.Cleanup(c.Close)
	const delay = 4 * time.Second

	conn := open(t, c, Handshake{})
	resp, err := conn.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "ok?"}, nil), answerLater(t, conn, delay, true))
	if err != nil {
		t.Fatalf("a call answered after %v, its clock stopped meanwhile: %v", delay, err)
	}
	if text := toolText(t, resp); text != "answer: accept" {
		t.Fatalf("confirm: %q", text)
	}

	other := open(t, c, Handshake{})
	_, err = other.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "ok?"}, nil), answerLater(t, other, delay, false))
	if err == nil || !strings.Contains(err.Error(), "timed out after 3s") {
		t.Fatalf("a call answered after %v without waiting on the client: %v, want the 3s timeout", delay, err)
	}
}

// A process whose call waits on a client does not count against the
// pool's Max: another request gets a process meanwhile. At most Max
// processes wait at once: one more is refused at AwaitClient, and its
// backend's request gets an error rather than the pool's last process.
func TestStdio_ProcessesWaitingOnClientsLeaveThePoolToOthers(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	waiting := open(t, c, Handshake{})
	asked := make(chan struct{})
	answer := make(chan struct{})
	done := make(chan string, 1)
	go func() {
		resp, err := waiting.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "ok?"}, nil), func(msg jsonrpc.Message) {
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.Method != "elicitation/create" {
				return
			}
			release, err := waiting.AwaitClient()
			if err != nil {
				t.Errorf("the first call waiting on its client: %v", err)
				return
			}
			close(asked)
			go func() {
				defer release()
				<-answer
				_ = waiting.Reply(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{"ok":true}}`)})
			}()
		})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- toolText(t, resp)
	}()
	<-asked

	ctx, cancel := context.WithTimeout(context.Background(), failsafe)
	defer cancel()
	other, err := c.Open(ctx, Handshake{}, nil)
	if err != nil {
		t.Fatalf("another request while the only process waits on a client: %v", err)
	}
	defer other.Close(false)
	callPid(t, other)
	var refused error
	resp, err := other.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "again?"}, nil), func(msg jsonrpc.Message) {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || req.Method != "elicitation/create" {
			return
		}
		if _, refused = other.AwaitClient(); refused != nil {
			_ = other.Reply(context.Background(), &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: -32603, Message: refused.Error()}})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if refused == nil || !strings.Contains(refused.Error(), "waiting on clients") {
		t.Fatalf("a second process waiting on a client with Max 1: %v, want it refused", refused)
	}
	if text := toolText(t, resp); !strings.Contains(text, "elicitation failed") {
		t.Fatalf("the refused elicitation's tool said %q", text)
	}
	close(answer)
	if got := <-done; got != "answer: accept" {
		t.Fatalf("the waiting call, answered: %q", got)
	}
}
