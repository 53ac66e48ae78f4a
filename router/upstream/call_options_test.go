package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
)

// A call's options reach that call alone: its headers go on its own POST
// and on no other request of the connection, and its result check is
// what checks its answer.
func TestCallOptions_ReachTheirCallAlone(t *testing.T) {
	srv, rec := serve(t, newBackend(), modeStateless)
	ctx := context.Background()
	modern := Handshake{ProtocolVersion: wire.ModernProtocolVersion, SkipInitialize: true}
	conn, err := newClient(t, srv.URL, modeStateless, 10*time.Second).Open(ctx, modern, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(false)
	checked := 0
	opts := CallOptions{
		Headers: http.Header{"Mcp-Param-Text": {"hi"}},
		ResultCheck: func(data []byte, i int) int {
			checked++
			dec := json.NewDecoder(bytes.NewReader(data[i:]))
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return -1
			}
			return i + int(dec.InputOffset())
		},
	}
	resp, err := conn.CallWith(ctx, "tools/call", callParams(t, "echo", nil), nil, opts)
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/call: %v %v", err, resp)
	}
	if _, err := conn.Call(ctx, "tools/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Error("the call's result check was not called")
	}
	calls, lists := rec.posted("tools/call"), rec.posted("tools/list")
	if len(calls) != 1 || len(lists) != 1 {
		t.Fatalf("%d tools/call and %d tools/list POSTs", len(calls), len(lists))
	}
	if got := calls[0].Header.Get("Mcp-Param-Text"); got != "hi" {
		t.Errorf("tools/call Mcp-Param-Text %q, want hi", got)
	}
	if got := lists[0].Header.Get("Mcp-Param-Text"); got != "" {
		t.Errorf("the next call carried the first one's header: %q", got)
	}
}
