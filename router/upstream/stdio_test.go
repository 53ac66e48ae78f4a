//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/goleak"
)

// stdioConfig runs this test binary as the stdio server (see TestMain).
// stdioConfig runs this test binary as a stdio backend: a process, so
// not under -short.
func stdioConfig(t testing.TB, pool PoolConfig) Config {
	testsupport.SkipShort(t)
	return Config{Key: testKey, Transport: TransportStdio, Timeout: 10 * time.Second,
		Stdio: &StdioConfig{Command: os.Args[0], Args: []string{"-test.run=^$"},
			Env: map[string]string{stdioServerEnv: "1"}, Pool: pool}}
}

func newStdioClient(t *testing.T, pool PoolConfig, opts ...Option) *Client {
	t.Helper()
	c := New(stdioConfig(t, pool), opts...)
	t.Cleanup(c.Close)
	return c
}

func toolCall(t *testing.T, name string, args map[string]any, meta map[string]any) json.RawMessage {
	t.Helper()
	p := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		p["_meta"] = meta
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// callPid asks the process serving conn for its pid.
func callPid(t *testing.T, conn *Conn) string {
	t.Helper()
	resp, err := conn.Call(context.Background(), "tools/call", toolCall(t, "pid", nil, nil), nil)
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	return toolText(t, resp)
}

func TestStdio_ServesListsCallsAndProgress(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 2})
	conn := open(t, c, Handshake{})

	init := conn.Init()
	if init == nil || init.ProtocolVersion != wire.LatestProtocolVersion || init.SessionID != "" {
		t.Fatalf("Init() = %+v, want the process's handshake at %s without a session id", init, wire.LatestProtocolVersion)
	}
	var res struct {
		ServerInfo   struct{ Name string }     `json:"serverInfo"`
		Capabilities map[string]map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(init.Raw, &res); err != nil || res.ServerInfo.Name != "stdio-everything" {
		t.Fatalf("initialize result %s: %v", init.Raw, err)
	}
	for _, name := range []string{"tools", "resources", "prompts"} {
		if _, ok := res.Capabilities[name]["listChanged"]; ok {
			t.Errorf("capabilities.%s keeps listChanged; a shared process's changes reach no client", name)
		}
	}
	if _, ok := res.Capabilities["resources"]["subscribe"]; ok {
		t.Error("capabilities.resources keeps subscribe")
	}

	resp, err := conn.Call(context.Background(), "tools/list", nil, nil)
	if err != nil || resp.Error != nil {
		t.Fatalf("tools/list: %v %v", err, resp)
	}
	if !strings.Contains(string(resp.Result), `"name":"pid"`) {
		t.Errorf("tools/list lacks pid: %s", resp.Result)
	}

	var got []string
	resp, err = conn.Call(context.Background(), "tools/call",
		toolCall(t, "progress", map[string]any{"steps": 3}, map[string]any{"progressToken": "tok"}),
		func(msg jsonrpc.Message) {
			if n, ok := msg.(*jsonrpc.Request); ok && n.Method == "notifications/progress" {
				got = append(got, string(n.Params))
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, resp); text != "done" {
		t.Errorf("progress result %q", text)
	}
	if len(got) != 3 || !strings.Contains(got[2], `"progress":3`) {
		t.Errorf("progress notifications %v, want 3 in order", got)
	}
}

func TestStdio_ProcessIsReusedByTheNextRequest(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	first := open(t, c, Handshake{})
	pid := callPid(t, first)
	first.Close(false)
	second := open(t, c, Handshake{})
	if again := callPid(t, second); again != pid {
		t.Errorf("second request ran in process %s, want the idle %s", again, pid)
	}
	// Ids go on from the last request's: the process never sees one twice.
	if n := second.nextID.Load(); n <= 2 {
		t.Errorf("second Conn's last id %d, want it after the first Conn's", n)
	}
}

func TestStdio_ProcessDyingMidCallFailsTheCallAndIsReplaced(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	conn := open(t, c, Handshake{})
	pid := callPid(t, conn)

	progressed := false
	_, err := conn.Call(context.Background(), "tools/call",
		toolCall(t, "crash", map[string]any{"progress": true}, map[string]any{"progressToken": 1}),
		func(jsonrpc.Message) { progressed = true })
	ue := mustUpstreamError(t, err)
	if !errors.Is(err, errProcessExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error %q (%v), want the process's exit named", err, ue.Err)
	}
	if !progressed {
		t.Error("the call's progress before the crash was not delivered")
	}
	conn.Close(false)

	next := open(t, c, Handshake{})
	if again := callPid(t, next); again == pid {
		t.Errorf("the next request ran in the dead process %s", pid)
	}
	// The crash is counted once the process is reaped (maybe after the
	// call's answer); the replacement is a second start.
	if !testsupport.Eventually(t, failsafe, func() bool { return c.Stats().Crashed == 1 }) {
		t.Errorf("stats %+v, want one crash", c.Stats())
	}
	if st := c.Stats(); st.Started != 2 {
		t.Errorf("stats %+v, want two starts", st)
	}
}

// A server that prints something else than JSON-RPC on stdout (a stray
// debug print) cannot be read any more: its call fails naming the
// backend, and the process is stopped and replaced.
func TestStdio_MalformedOutputStopsTheProcess(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	conn := open(t, c, Handshake{})
	pid := callPid(t, conn)
	_, err := conn.Call(context.Background(), "tools/call", toolCall(t, "garble", nil, nil), nil)
	if mustUpstreamError(t, err); !strings.Contains(err.Error(), "malformed message on stdout") {
		t.Errorf("call on a process whose output broke: %v", err)
	}
	conn.Close(false)
	if again := callPid(t, open(t, c, Handshake{})); again == pid {
		t.Error("the process with broken output served the next request")
	}
}

func TestStdio_PoolMaxBoundsTheProcesses(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 2})
	gate := filepath.Join(t.TempDir(), "gate")
	var wg sync.WaitGroup
	pids := make(chan string, 3)
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			conn, err := c.Open(context.Background(), Handshake{}, nil)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(false)
			resp, err := conn.Call(context.Background(), "tools/call", toolCall(t, "wait", map[string]any{"gate": gate}, nil), nil)
			if err != nil {
				errs <- err
				return
			}
			pids <- toolText(t, resp)
		})
	}
	started := func() int {
		m, _ := filepath.Glob(gate + ".started.*")
		return len(m)
	}
	if !testsupport.Eventually(t, failsafe, func() bool { return started() == 2 }) {
		t.Fatalf("%d calls started, want 2", started())
	}
	if s := c.Stats(); s.Running != 2 {
		t.Errorf("with two calls running and one waiting: %+v, want 2 processes", s)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(pids)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var seen []string
	for p := range pids {
		if !slices.Contains(seen, p) {
			seen = append(seen, p)
		}
	}
	if len(seen) != 2 {
		t.Errorf("three calls ran in processes %v, want two (max 2: the third waits for one)", seen)
	}
}

func TestStdio_PoolWaitEndsWithTheCallersContext(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	held := open(t, c, Handshake{})
	callPid(t, held)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Open(ctx, Handshake{}, nil)
	if mustUpstreamError(t, err); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for a free process (all 1 in use)") {
		t.Errorf("Open with every process in use: %v, want the deadline", err)
	}
}

func TestStdio_MinKeepsProcessesAndIdleStopsTheRest(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Min: 1, Max: 3, Idle: 50 * time.Millisecond})
	if !testsupport.Eventually(t, failsafe, func() bool { return c.Stats().Idle == 1 }) {
		t.Fatalf("pool %+v, want min 1 started with no request", c.Stats())
	}
	// Two requests at once need a second process...
	a, b := open(t, c, Handshake{}), open(t, c, Handshake{})
	if pa, pb := callPid(t, a), callPid(t, b); pa == pb {
		t.Fatalf("two open Conns share process %s", pa)
	}
	a.Close(false)
	b.Close(false)
	// ...which is stopped once idle, down to min.
	if !testsupport.Eventually(t, failsafe, func() bool { s := c.Stats(); return s.Running == 1 && s.Idle == 1 }) {
		t.Fatalf("pool %+v, want the spare stopped after idle", c.Stats())
	}
	// A process that dies is replaced, with no request asking.
	conn := open(t, c, Handshake{})
	_, _ = conn.Call(context.Background(), "tools/call", toolCall(t, "crash", nil, nil), nil)
	conn.Close(false)
	if !testsupport.Eventually(t, failsafe, func() bool { return c.Stats().Idle == 1 }) {
		t.Fatalf("pool %+v, want the dead process replaced", c.Stats())
	}
}

func TestStdio_CancelledCallRetiresItsProcess(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	conn := open(t, c, Handshake{})
	pid := callPid(t, conn)
	ctx, cancel := context.WithCancel(context.Background())
	gate := filepath.Join(t.TempDir(), "gate")
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Call(ctx, "tools/call", toolCall(t, "wait", map[string]any{"gate": gate}, nil), nil)
		errc <- err
	}()
	if !testsupport.Eventually(t, failsafe, func() bool { m, _ := filepath.Glob(gate + ".started.*"); return len(m) == 1 }) {
		t.Fatal("the call did not start")
	}
	cancel()
	if err := wait(t, errc, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	conn.Close(false)
	next := open(t, c, Handshake{})
	if again := callPid(t, next); again == pid {
		t.Error("a process whose call was given up on served the next request")
	}
}

func TestStdio_LogMessagesFollowTheRequestsLevel(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	logs := func(h Handshake, level string) []string {
		conn := open(t, c, h)
		defer conn.Close(false)
		if h.LogLevel != "" {
			params, _ := json.Marshal(map[string]string{"level": h.LogLevel})
			if _, err := conn.Call(context.Background(), "logging/setLevel", params, nil); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		_, err := conn.Call(context.Background(), "tools/call", toolCall(t, "log", map[string]any{"level": level, "message": "m"}, nil),
			func(msg jsonrpc.Message) {
				if n, ok := msg.(*jsonrpc.Request); ok && n.Method == "notifications/message" {
					got = append(got, string(n.Params))
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := logs(Handshake{LogLevel: "debug"}, "info"); len(got) != 1 {
		t.Errorf("level debug, info message: got %v, want it", got)
	}
	// The same process, still at debug: a client that chose no level
	// gets nothing, one at warning nothing below it.
	if got := logs(Handshake{}, "info"); len(got) != 0 {
		t.Errorf("no level chosen: got %v, want none", got)
	}
	if got := logs(Handshake{LogLevel: "warning"}, "info"); len(got) != 0 {
		t.Errorf("level warning, info message: got %v, want none", got)
	}
	if got := logs(Handshake{LogLevel: "warning"}, "error"); len(got) != 1 {
		t.Errorf("level warning, error message: got %v, want it", got)
	}
}

func TestStdio_ServerRequestsReachTheCaller(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	conn := open(t, c, Handshake{})
	resp, err := conn.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "ok?"}, nil),
		func(msg jsonrpc.Message) {
			req, ok := msg.(*jsonrpc.Request)
			if !ok || req.Method != "elicitation/create" {
				return
			}
			_ = conn.Reply(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"action":"accept","content":{"ok":true}}`)})
		})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, resp); text != "answer: accept" {
		t.Errorf("confirm: %q", text)
	}
	// Without a handler the gateway answers -32601 for the client.
	resp, err = conn.Call(context.Background(), "tools/call", toolCall(t, "confirm", map[string]any{"question": "ok?"}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, resp); !strings.Contains(text, "elicitation failed") {
		t.Errorf("confirm without a handler: %q", text)
	}
}

func TestStdio_SubscriptionsAreRefused(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	conn := open(t, c, Handshake{})
	resp, err := conn.Call(context.Background(), "resources/subscribe", json.RawMessage(`{"uri":"demo://counter"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(resp.Error, &rpcErr) || rpcErr.Code != wire.CodeMethodNotFound || !strings.Contains(rpcErr.Message, testKey) {
		t.Errorf("resources/subscribe answered %v, want -32601 naming the backend", resp.Error)
	}
	if err := conn.Listen(context.Background(), func(*jsonrpc.Request) {}, nil); !errors.Is(err, ErrNoStream) {
		t.Errorf("Listen: %v, want ErrNoStream", err)
	}
}

func TestStdio_DiscoverStartsNoProcess(t *testing.T) {
	c := newStdioClient(t, PoolConfig{Max: 1})
	_, err := c.Discover(context.Background(), nil, nil)
	if !errors.Is(err, ErrNotModern) {
		t.Errorf("Discover: %v, want ErrNotModern", err)
	}
	if s := c.Stats(); s.Running != 0 || s.Starting != 0 {
		t.Errorf("pool after Discover: %+v, want no process", s)
	}
}

func TestStdio_BadCommandFailsOpenNamingTheBackend(t *testing.T) {
	cfg := stdioConfig(t, PoolConfig{Max: 1})
	cfg.Stdio.Command = filepath.Join(t.TempDir(), "no-such-server")
	c := New(cfg)
	defer c.Close()
	_, err := c.Open(context.Background(), Handshake{}, nil)
	if ue := mustUpstreamError(t, err); ue.Op != "start" {
		t.Errorf("error %q: op %q, want start", err, ue.Op)
	}
}

// Close stops every process, idle or in use, and returns once each has
// been reaped: no process and no goroutine is left behind.
func TestStdio_CloseStopsEveryProcessAndLeaksNothing(t *testing.T) {
	before := goleak.IgnoreCurrent()
	cfg := stdioConfig(t, PoolConfig{Min: 1, Max: 2})
	// Close's grace for the busy process; also the bound of each
	// process's start, which a loaded machine can stretch past 1 s.
	cfg.Timeout = 4 * time.Second
	c := New(cfg)
	idle := open(t, c, Handshake{})
	idlePid := callPid(t, idle)
	idle.Close(false)
	busy, err := c.Open(context.Background(), Handshake{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	busyPid := callPid(t, busy)
	gate := filepath.Join(t.TempDir(), "gate")
	errc := make(chan error, 1)
	go func() {
		_, err := busy.Call(context.Background(), "tools/call", toolCall(t, "wait", map[string]any{"gate": gate}, nil), nil)
		errc <- err
	}()
	if !testsupport.Eventually(t, failsafe, func() bool { m, _ := filepath.Glob(gate + ".started.*"); return len(m) == 1 }) {
		t.Fatal("the call did not start")
	}
	c.Close()
	if err := wait(t, errc, "the call in flight"); err == nil {
		t.Error("a call in flight when Close gave up on it succeeded")
	}
	busy.Close(false)
	for _, pid := range []string{idlePid, busyPid} {
		var n int
		fmt.Sscan(pid, &n)
		if err := syscall.Kill(n, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d after Close: kill 0 = %v, want ESRCH (gone)", n, err)
		}
	}
	goleak.VerifyNone(t, before)
}
