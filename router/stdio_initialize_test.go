//go:build unix

package router_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A stdio backend that never answers initialize costs a request its
// backend's timeout once, not once per step: a 2026-07-28 call used to
// wait for the discovery's initialize, then for the call's own (twice the
// timeout), and a 2025 session's first call waited again right after its
// initialize had failed. Within the re-probe interval a failed backend is
// not tried again (router.Options.ReprobeInterval). Counted in process
// starts, not seconds: each start is one initialize that ran out of time.
func TestStdio_InitializeThatNeverAnswersIsTriedOncePerRequest(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	const timeout = time.Second
	vhosts := map[string]*router.VirtualHost{"demo": {Name: "demo", Backends: map[string]*router.Backend{
		"mute": {Config: upstream.Config{Key: "mute", Transport: upstream.TransportStdio, Timeout: timeout,
			// Reads its stdin and never answers; each start leaves a line.
			Stdio: &upstream.StdioConfig{Command: "/bin/sh", Args: []string{"-c", `echo start >> "$STARTS"; while read -r _; do :; done`},
				Env: map[string]string{"STARTS": starts}, Pool: upstream.PoolConfig{Max: 4, Idle: time.Minute}}}},
	}}}
	st := newStore(t)
	r := router.New(vhosts, router.Options{Store: st, ReprobeInterval: time.Minute})
	defer r.Close()
	count := func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "start\n")
	}
	id, _ := jsonrpc.MakeID(float64(1))
	call := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{}}`)}

	began := time.Now()
	resp := r.Handle(t.Context(), &router.Call{VHost: "demo", Principal: "alice", Request: call, Caller: &router.ModernClient{ClientCapabilities: json.RawMessage(`{}`)}})
	e := rpcErr(t, resp)
	t.Logf("2026-07-28 call: %v after %v", e.Message, time.Since(began))
	if e.Code != -32603 || !strings.Contains(e.Message, `backend "mute"`) || !strings.Contains(e.Message, "timed out after "+timeout.String()) {
		t.Errorf("2026-07-28 call: %d %q, want -32603 naming the backend and its timeout", e.Code, e.Message)
	}
	if n := count(); n != 1 {
		t.Errorf("one 2026-07-28 call started %d processes (initialize attempts), want 1", n)
	}

	sess, _ := r.Initialize(t.Context(), "demo", "alice", nil, &jsonrpc.Request{ID: id, Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)})
	if sess == nil || sess.Backends["mute"].OK() {
		t.Fatalf("initialize: session %+v, want one recording the backend's failure", sess)
	}
	before := count()
	e = rpcErr(t, r.Handle(t.Context(), &router.Call{Caller: &router.SessionCaller{Session: sess}, Request: call}))
	if e.Code != -32603 || !strings.Contains(e.Message, `backend "mute"`) {
		t.Errorf("2025 call after a failed initialize: %d %q, want -32603 naming the backend", e.Code, e.Message)
	}
	if n := count() - before; n != 0 {
		t.Errorf("a 2025 call right after its session's initialize failed started %d more processes, want none", n)
	}
}
