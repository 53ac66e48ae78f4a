package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func bigEchoParams(t *testing.T, size int) json.RawMessage {
	t.Helper()
	p, err := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", size)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// In every transport, an answer's bytes are charged to the request that
// read it until the request lets go; a call's other messages are not.
func TestResponseBudget_AnswerHeldUntilReleased(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			budget := NewBudget(1 << 20)
			// Without a tab nothing is counted.
			open(t, newClient(t, srv.URL+"/", m, 10*time.Second), Handshake{})
			if held := budget.Held(); held != 0 {
				t.Fatalf("%d bytes held for a connection opened under no request", held)
			}
			ctx, held := budget.Hold(context.Background())
			conn, err := newClient(t, srv.URL+"/", m, 10*time.Second).Open(ctx, Handshake{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(false)
			resp, err := conn.Call(ctx, "tools/call", bigEchoParams(t, 100<<10), nil)
			if err != nil || !strings.Contains(toolText(t, resp), strings.Repeat("x", 100<<10)) {
				t.Fatalf("call: %v", err)
			}
			if held := budget.Held(); held < 100<<10 {
				t.Fatalf("%d bytes held after a 100 KiB answer; it must stay held until released", held)
			}
			held.Release()
			held.Release() // idempotent
			if held := budget.Held(); held != 0 {
				t.Fatalf("%d bytes held after release", held)
			}
		})
	}
}

func TestResponseBudget_AnswerLargerThanTheBudgetFails(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			budget := NewBudget(64 << 10)
			ctx, held := budget.Hold(context.Background())
			defer held.Release()
			// Opened under the request's context, as the router does: a
			// legacy stream is read under it.
			conn, err := newClient(t, srv.URL+"/", m, time.Minute).Open(ctx, Handshake{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(false)
			_, err = conn.Call(ctx, "tools/call", bigEchoParams(t, 100<<10), nil)
			ue := mustUpstreamError(t, err)
			if ue.Backend != testKey || !strings.Contains(err.Error(), "larger than the in-flight response budget") {
				t.Fatalf("error %v: want one naming the backend and the budget", err)
			}
			if !errors.Is(err, ErrResponseBudget) {
				t.Fatalf("error %v is not ErrResponseBudget", err)
			}
		})
	}
}

// A read that finds the budget taken waits, and the call's timeout ends
// the wait with an error that says what it was waiting for.
func TestResponseBudget_WaitEndsWithTheTimeout(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeJSON} {
		t.Run(m.name, func(t *testing.T) {
			srv, _ := serve(t, newBackend(), m)
			budget := NewBudget(128 << 10)
			holder, holding := budget.Hold(context.Background())
			defer holding.Release()
			conn := open(t, newClient(t, srv.URL+"/", m, time.Minute), Handshake{})
			if _, err := conn.Call(holder, "tools/call", bigEchoParams(t, 100<<10), nil); err != nil {
				t.Fatal(err)
			}
			ctx, held := budget.Hold(context.Background())
			defer held.Release()
			waiter := open(t, newClient(t, srv.URL+"/", m, 2*time.Second), Handshake{})
			_, err := waiter.Call(ctx, "tools/call", bigEchoParams(t, 100<<10), nil)
			ue := mustUpstreamError(t, err)
			if !ue.Timeout() || !strings.Contains(err.Error(), "waiting for the in-flight response budget: timed out after 2s") {
				t.Fatalf("error %v: want a timeout while waiting for the budget", err)
			}
			if held := budget.Held(); held > budget.Size() {
				t.Fatalf("%d bytes held, over the budget", held)
			}
		})
	}
}

// BenchmarkBudget_SmallAnswer is the budget's cost for a typical answer:
// Hold, one metered read, release.
func BenchmarkBudget_SmallAnswer(b *testing.B) {
	budget := NewBudget(256 << 20)
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		ctx, held := budget.Hold(context.Background())
		r, m := meter(ctx, bytes.NewReader(answer))
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
		m.keep()
		held.Release()
	}
}
