package router

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		resp *jsonrpc.Response
		err  error
		want string
	}{
		{"result", &jsonrpc.Response{}, nil, OutcomeOK},
		{"json-rpc error", &jsonrpc.Response{Error: &jsonrpc.Error{Code: -32602}}, nil, OutcomeRPCError},
		{"backend timeout", nil, &upstream.Error{Backend: "b", Err: context.DeadlineExceeded}, OutcomeTimeout},
		{"http status", nil, &upstream.Error{Backend: "b", Status: 503}, OutcomeTransportError},
		{"connect", nil, errors.New("connection refused"), OutcomeTransportError},
		{"client went away", nil, &upstream.Error{Backend: "b", Err: context.Canceled}, OutcomeCancelled},
	} {
		if got := outcome(c.resp, c.err); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
