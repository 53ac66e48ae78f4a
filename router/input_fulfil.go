package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/envelope"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2025-era client does not know multi-round-trip requests: a backend
// that speaks only 2026-07-28 asks it for input by answering
// input_required, which such a client cannot read. The gateway fulfils the
// input requests itself, the way the go-sdk's own server does for legacy
// clients: it sends the client real sampling, elicitation and roots
// requests on the call's event stream (their answers may reach any
// instance: the session runtime carries them), then calls the backend
// again with the answers and the backend's requestState, for as many
// rounds as the backend asks (maxInputRounds), until it answers complete.

const (
	// maxInputRounds bounds the rounds of one call, so a backend that
	// keeps asking cannot hold a call forever.
	maxInputRounds = 10
	// maxRetryLaters bounds the rounds in which the backend asks for
	// nothing (load shedding: "retry later").
	maxRetryLaters = 3
	// retryLaterDelay is the pause before such a retry.
	retryLaterDelay = 100 * time.Millisecond
)

// inputRound is what an input_required result asks for.
type inputRound struct {
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState *string `json:"requestState"`
}

// callFulfilling runs a routed call on a 2026-07-28 connection for a
// 2025-era client: while the backend answers input_required, the client is
// asked and the backend called again. It returns the backend's last answer
// (complete, or an error). opts go with every round's call.
func (rc *routedCalls) callFulfilling(ctx context.Context, conn *upstream.Conn, cs *callStream, method string, params json.RawMessage, opts upstream.CallOptions) (*jsonrpc.Response, error) {
	laters := 0
	for round := 0; ; round++ {
		resp, err := conn.CallWith(ctx, method, params, cs.onMessage, opts)
		if err != nil || resp.Error != nil {
			return resp, err
		}
		if !bytes.Contains(resp.Result, []byte(envelope.ResultInputRequired)) {
			return resp, nil // most results: complete, no decode
		}
		var head struct {
			ResultType string `json:"resultType"`
		}
		if json.Unmarshal(resp.Result, &head) != nil || head.ResultType != envelope.ResultInputRequired {
			return resp, nil
		}
		if round+1 >= maxInputRounds {
			return &jsonrpc.Response{Error: rpcError(CodeInternalError, "backend %s asked for input more than %d times in one call", wire.Quote(cs.key), maxInputRounds)}, nil
		}
		var in inputRound
		if err := json.Unmarshal(resp.Result, &in); err != nil {
			return &jsonrpc.Response{Error: rpcError(CodeInternalError, "backend %s answered input_required with a malformed result", wire.Quote(cs.key))}, nil
		}
		answers := map[string]json.RawMessage{}
		if len(in.InputRequests) == 0 {
			// Nothing to ask: the backend sheds load and wants a retry.
			if laters++; laters > maxRetryLaters {
				return &jsonrpc.Response{Error: rpcError(CodeInternalError, "backend %s is busy: it asked to retry later %d times", wire.Quote(cs.key), maxRetryLaters)}, nil
			}
			t := time.NewTimer(retryLaterDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		} else if answers, err = rc.askAll(ctx, cs, in); err != nil {
			return &jsonrpc.Response{Error: rpcError(CodeInternalError, "%s", err.Error())}, nil
		}
		if params, err = retryParams(params, answers, in.RequestState); err != nil {
			return nil, err
		}
	}
}

// askAll sends the client every input request of a round, concurrently,
// and collects the answers by key. A request the client cannot take (a
// capability it did not declare, no event stream) or answers with an
// error fails the call: the backend gets no partial answer.
func (rc *routedCalls) askAll(ctx context.Context, cs *callStream, in inputRound) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(in.InputRequests))
	for k := range in.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := cs.c
	ask := c.Caller.asker()
	for _, k := range keys {
		ir := in.InputRequests[k]
		capName, known := clientCapability(ir.Method)
		switch {
		case !known:
			return nil, fmt.Errorf("backend %s asked for %s, which the gateway does not forward to clients", wire.Quote(cs.key), wire.Quote(ir.Method))
		case !hasClientCapability(c.peer.capabilities, capName):
			return nil, fmt.Errorf("backend %s asked for %s, but the client did not declare the %q capability", wire.Quote(cs.key), ir.Method, capName)
		case ask == nil:
			return nil, fmt.Errorf("backend %s asked the client for %s, which cannot be asked anything on this call", wire.Quote(cs.key), ir.Method)
		}
	}
	answers := make(map[string]json.RawMessage, len(keys))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, k := range keys {
		ir := in.InputRequests[k]
		wg.Go(func() {
			resp := ask(ctx, c, &jsonrpc.Request{Method: ir.Method, Params: ir.Params})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.Error != nil && firstErr == nil:
				firstErr = fmt.Errorf("the client's answer to %s failed: %v", ir.Method, resp.Error)
			case resp.Error == nil:
				answers[k] = resp.Result
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return answers, nil
}

// retryParams are a call's params for its next round: the original
// params, with the round's answers and the backend's requestState (none
// when the backend kept none).
func retryParams(params json.RawMessage, answers map[string]json.RawMessage, state *string) (json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
	}
	p["inputResponses"] = wire.RawObject(answers)
	delete(p, "requestState")
	if state != nil && *state != "" {
		p["requestState"], _ = json.Marshal(*state)
	}
	return wire.RawObject(p), nil
}
