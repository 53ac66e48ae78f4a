package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestConn_CallToolStreamable(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeStateless} {
		t.Run(m.name, func(t *testing.T) {
			srv, rec := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{ProtocolVersion: "2025-11-25"})

			init := conn.Init()
			if init == nil || init.ProtocolVersion != "2025-11-25" || !json.Valid(init.Raw) {
				t.Fatalf("Init() = %+v", init)
			}
			if got := init.SessionID != ""; got != m.stateful {
				t.Errorf("SessionID = %q, stateful backend = %v", init.SessionID, m.stateful)
			}
			resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if text := toolText(t, resp); !strings.Contains(text, `"args":{"q":"x"}`) {
				t.Errorf("echo = %s", text)
			}

			calls := rec.posted("tools/call")
			if len(calls) != 1 {
				t.Fatalf("backend saw %d tools/call POSTs, want 1", len(calls))
			}
			// Upstream ids are the connection's own: initialize was 1.
			if id := requestID(t, calls[0].Body); id != int64(2) {
				t.Errorf("tools/call id = %v, want 2", id)
			}
			h := calls[0].Header
			if h.Get("Mcp-Protocol-Version") != "2025-11-25" || h.Get("Mcp-Session-Id") != init.SessionID {
				t.Errorf("headers: version %q session %q", h.Get("Mcp-Protocol-Version"), h.Get("Mcp-Session-Id"))
			}
			if !strings.Contains(h.Get("Accept"), "text/event-stream") || h.Get("Content-Type") != "application/json" {
				t.Errorf("Accept %q Content-Type %q", h.Get("Accept"), h.Get("Content-Type"))
			}
			if n := rec.count(http.MethodGet); n != 0 {
				t.Errorf("client opened %d GET streams, want none", n)
			}
			if n := len(rec.posted("server/discover")); n != 0 {
				t.Errorf("client sent server/discover")
			}
		})
	}
}

func TestConn_CallToolJSONResponse(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeJSON)
	conn := open(t, newClient(t, srv.URL, modeJSON, 10*time.Second), Handshake{})
	resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if text := toolText(t, resp); !strings.Contains(text, `"q":"x"`) {
		t.Errorf("echo = %s", text)
	}
	calls := rec.posted("tools/call")
	if len(calls) != 1 || calls[0].Status != http.StatusOK || !json.Valid(calls[0].Resp.Bytes()) {
		t.Fatalf("backend did not answer with a JSON body: %+v", calls)
	}
}

func TestConn_CallToolLegacySSE(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeSSE)
	conn := open(t, newClient(t, srv.URL, modeSSE, 10*time.Second), Handshake{})
	if init := conn.Init(); init == nil || init.ProtocolVersion != "2024-11-05" || init.SessionID != "" {
		t.Fatalf("Init() = %+v", init)
	}
	// Two calls at once exercise the reader's demultiplexing by id.
	type result struct {
		resp *jsonrpc.Response
		err  error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil)
			results <- result{resp, err}
		}()
	}
	for range 2 {
		r := wait(t, results, "call result")
		if r.err != nil {
			t.Fatalf("Call: %v", r.err)
		}
		if text := toolText(t, r.resp); !strings.Contains(text, `"q":"x"`) {
			t.Errorf("echo = %s", text)
		}
	}
	if n := rec.count(http.MethodGet); n != 1 {
		t.Errorf("GET streams = %d, want 1", n)
	}
}

func TestConn_ProgressNotificationsReachOnMessage(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{})
			var got []*jsonrpc.Request
			resp, err := conn.Call(context.Background(), "tools/call",
				callParams(t, "progress", map[string]any{"progressToken": "tok-1"}),
				func(msg jsonrpc.Message) {
					if r, ok := msg.(*jsonrpc.Request); ok {
						got = append(got, r)
					}
				})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if text := toolText(t, resp); text != "done" {
				t.Errorf("result = %q", text)
			}
			if len(got) != 3 {
				t.Fatalf("onMessage got %d messages, want 3 progress notifications", len(got))
			}
			for i, r := range got {
				var p struct {
					ProgressToken string  `json:"progressToken"`
					Progress      float64 `json:"progress"`
				}
				if err := json.Unmarshal(r.Params, &p); err != nil {
					t.Fatal(err)
				}
				if r.Method != "notifications/progress" || r.IsCall() || p.ProgressToken != "tok-1" || p.Progress != float64(i+1) {
					t.Errorf("message %d = %s %s", i, r.Method, r.Params)
				}
			}
		})
	}
}

func TestConn_ServerRequestAnsweredWithErrorWhenNoHandler(t *testing.T) {
	caps := json.RawMessage(`{"sampling":{}}`)
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{ClientCapabilities: caps})
			resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "sample", nil), nil)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if text := toolText(t, resp); !strings.HasPrefix(text, "sampling error:") || !strings.Contains(text, "not supported by the gateway") {
				t.Errorf("tool saw %q, want the gateway's -32601 answer", text)
			}
		})
		t.Run(m.name+"/handler-replies", func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{ClientCapabilities: caps})
			ctx := context.Background()
			resp, err := conn.Call(ctx, "tools/call", callParams(t, "sample", nil), func(msg jsonrpc.Message) {
				req, ok := msg.(*jsonrpc.Request)
				if !ok || req.Method != "sampling/createMessage" {
					t.Errorf("unexpected message %#v", msg)
					return
				}
				err := conn.Reply(ctx, &jsonrpc.Response{ID: req.ID,
					Result: json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m"}`)})
				if err != nil {
					t.Errorf("Reply: %v", err)
				}
			})
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if text := toolText(t, resp); text != "sampled: hello" {
				t.Errorf("tool saw %q", text)
			}
		})
	}
}

func TestConn_CancelSendsNotificationsCancelled(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			b := newBackend()
			srv, rec := serve(t, b, m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{})

			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := conn.Call(ctx, "tools/call", callParams(t, "block", nil), nil)
				errc <- err
			}()
			wait(t, b.started, "tool start")
			cancel()
			err := wait(t, errc, "Call to return")
			mustUpstreamError(t, err)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			// The tool only ends when the backend processes notifications/cancelled:
			// the go-sdk does not tie handlers to the POST's lifetime here.
			wait(t, b.cancelled, "tool to observe cancellation")

			sent := rec.posted("notifications/cancelled")
			if len(sent) != 1 {
				t.Fatalf("notifications/cancelled sent %d times, want 1", len(sent))
			}
			var n struct {
				Params struct {
					RequestID any    `json:"requestId"`
					Reason    string `json:"reason"`
				} `json:"params"`
			}
			if err := json.Unmarshal(sent[0].Body, &n); err != nil {
				t.Fatal(err)
			}
			if n.Params.RequestID != float64(2) || n.Params.Reason == "" {
				t.Errorf("notifications/cancelled params = %+v, want requestId 2 and a reason", n.Params)
			}
		})
	}
}

func TestConn_BackendJSONRPCErrorPassesThrough(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{})
			resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "no-such-tool", nil), nil)
			if err != nil {
				t.Fatalf("a JSON-RPC error must not be a Go error: %v", err)
			}
			var werr *jsonrpc.Error
			if !errors.As(resp.Error, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "no-such-tool") {
				t.Errorf("resp.Error = %#v", resp.Error)
			}
		})
	}
}

func TestConn_UnreachableBackendNamesBackend(t *testing.T) {
	url := closedPortURL(t)
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			_, err := newClient(t, url, m, 5*time.Second).Open(context.Background(), Handshake{}, nil)
			ue := mustUpstreamError(t, err)
			if ue.Status != 0 || !strings.Contains(err.Error(), "unreachable") {
				t.Errorf("err = %v (status %d)", err, ue.Status)
			}
			if strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("error %q leaks the backend address", err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) {
				t.Errorf("the network error is not reachable through Unwrap: %#v", err)
			}
		})
	}
}

func TestConn_TimeoutNamesBackend(t *testing.T) {
	t.Run("call", func(t *testing.T) {
		b := newBackend()
		srv, rec := serve(t, b, modeStreamable)
		conn := open(t, newClient(t, srv.URL, modeStreamable, 300*time.Millisecond), Handshake{})
		_, err := conn.Call(context.Background(), "tools/call", callParams(t, "block", nil), nil)
		ue := mustUpstreamError(t, err)
		if want := `backend "gateway-one": tools/call: timed out after 300ms`; err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
		if !ue.Timeout() || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout not recognisable: %v", err)
		}
		if cause := wait(t, b.cancelled, "tool to observe cancellation"); cause == "" {
			t.Error("tool saw no cause")
		}
		if sent := rec.posted("notifications/cancelled"); len(sent) != 1 || !strings.Contains(string(sent[0].Body), "timed out after 300ms") {
			t.Errorf("notifications/cancelled = %v", sent)
		}
	})
	t.Run("open", func(t *testing.T) {
		url := blackholeURL(t)
		for _, m := range []mode{modeStreamable, modeSSE} {
			_, err := newClient(t, url, m, 200*time.Millisecond).Open(context.Background(), Handshake{}, nil)
			mustUpstreamError(t, err)
			if want := `backend "gateway-one": initialize: timed out after 200ms`; err.Error() != want {
				t.Errorf("%s: err = %q, want %q", m.name, err, want)
			}
		}
	})
}

func TestConn_ResultIsByteForByte(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeJSON, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			srv, rec := serve(t, newBackend(), m)
			conn := open(t, newClient(t, srv.URL, m, 10*time.Second), Handshake{})
			resp, err := conn.Call(context.Background(), "tools/call", callParams(t, "rich", nil), nil)
			if err != nil || resp.Error != nil {
				t.Fatalf("Call: %v %v", err, resp.Error)
			}
			sent := serverResult(t, rec, m, resp.ID)
			if string(resp.Result) != string(sent) {
				t.Errorf("result changed in transit:\n got %s\nsent %s", resp.Result, sent)
			}
			for _, want := range []string{`"unknownField":{"nested":[true,null,"x\"y"]}`, `"x-vendor/trace"`, `12345678901234`} {
				if !strings.Contains(string(resp.Result), want) {
					t.Errorf("result lost %s: %s", want, resp.Result)
				}
			}
		})
	}
}

// serverResult finds, in what the backend wrote, the raw result it sent
// for id: in the POST's body (Streamable HTTP) or on the GET stream (SSE).
func serverResult(t *testing.T, rec *recorder, m mode, id jsonrpc.ID) json.RawMessage {
	t.Helper()
	for _, e := range rec.exchanges() {
		var bodies [][]byte
		if e.Resp.Len() > 0 && json.Valid(e.Resp.Bytes()) {
			bodies = append(bodies, e.Resp.Bytes())
		} else {
			r := newSSEReader(e.Resp, 0, 0)
			for ev, err := r.Next(); err == nil; ev, err = r.Next() {
				bodies = append(bodies, ev.Data)
			}
		}
		for _, body := range bodies {
			var msg struct {
				ID     any             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.ID == float64(id.Raw().(int64)) && msg.Result != nil {
				return msg.Result
			}
		}
	}
	t.Fatalf("%s: backend response for id %v not found", m.name, id.Raw())
	return nil
}
