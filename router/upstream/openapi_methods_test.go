package upstream

import (
	"context"
	"errors"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An OpenAPI backend's method table holds MCP methods only, and a method
// without a row is unknown to it (-32601), never served by another's.
func TestREST_MethodTable(t *testing.T) {
	for m := range restMethods {
		if _, ok := wire.LookupMethod(m); !ok {
			t.Errorf("restMethods serves %s, which is not an MCP method the gateway knows", m)
		}
	}
	id, _ := jsonrpc.MakeID(float64(1))
	r := &rest{conn: &Conn{c: &Client{cfg: Config{Key: "api"}}}}
	for _, m := range []string{"prompts/get", "resources/read", "completion/complete"} {
		resp, err := r.roundTrip(context.Background(), &jsonrpc.Request{ID: id, Method: m}, nil, CallOptions{})
		if err != nil || resp.Error == nil {
			t.Fatalf("%s: %v, %+v", m, err, resp)
		}
		var e *jsonrpc.Error
		if !errors.As(resp.Error, &e) || e.Code != wire.CodeMethodNotFound {
			t.Errorf("%s: error %v, want -32601", m, resp.Error)
		}
	}
	resp, err := r.roundTrip(context.Background(), &jsonrpc.Request{ID: id, Method: "ping"}, nil, CallOptions{})
	if err != nil || resp.Error != nil || string(resp.Result) != "{}" {
		t.Errorf("ping: %v, %+v", err, resp)
	}
}
