package tests

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newStdioCluster writes a config whose "demo" vhost has a stdio backend
// "files" (the stdio-everything server, run by each instance with the
// given pool) beside an HTTP backend "web".
func newStdioCluster(t *testing.T, pool string) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	server := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/tests/cmd/stdio-everything")
	c.backends["web"] = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "web"})
	cfg := fmt.Sprintf(`%s  demo:
    backends:
      files:
        transport: stdio
        command: %s
        timeout: 20s
        pool: %s
      web:
        url: %s
`, configHead(), server, pool, c.backends["web"].URL)
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(cfg)
	return c
}

func TestStdio_ListsCallsAndProgressThroughTheGateway(t *testing.T) {
	c := newStdioCluster(t, "{min: 1, max: 2}")
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)

	names := cl.Call(b, "tools/list", nil).ToolNames()
	for _, want := range []string{"files-pid", "files-progress", "files-echo", "web-echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list on the other instance lacks %s: %v", want, names)
		}
	}
	if got := cl.Call(a, "tools/call", map[string]any{"name": "files-echo", "arguments": map[string]any{"text": "hi"}}).Text(); !strings.Contains(got, "hi") {
		t.Errorf("files-echo: %q", got)
	}
	cl.Call(b, "prompts/get", map[string]any{"name": "files-greeting", "arguments": map[string]string{"name": "x"}})

	s := cl.CallStreaming(b, 100, "tools/call", map[string]any{"name": "files-progress",
		"arguments": map[string]any{"steps": 3}, "_meta": map[string]any{"progressToken": "mine"}})
	for i := 1; i <= 3; i++ {
		ev := s.Next()
		if ev.Method() != "notifications/progress" || !strings.Contains(ev.Data, `"progressToken":"mine"`) || !strings.Contains(ev.Data, fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("event %d: %s, want progress %d with the client's token", i, ev.Data, i)
		}
	}
	if final := s.Next(); !strings.Contains(final.Data, `"done"`) {
		t.Fatalf("final %s", final.Data)
	}

	// A 2026-07-28 request is served by the same processes: the gateway
	// translates, the backend speaks the session protocol.
	modern := &testsupport.Client{T: t, Token: c.token("bob")}
	if names := modern.ModernRequest(a, "tools/list", nil, nil).ToolNames(); !slices.Contains(names, "files-pid") {
		t.Errorf("2026-07-28 tools/list lacks files-pid: %v", names)
	}
	if got := modern.ModernRequest(b, "tools/call", map[string]any{"name": "files-echo", "arguments": map[string]any{"text": "modern"}}, nil).Text(); !strings.Contains(got, "modern") {
		t.Errorf("2026-07-28 files-echo: %q", got)
	}
	// The process's stderr is in the instance's log.
	if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Contains(a.Output(), "stdio-everything: started") }) {
		t.Errorf("the backend's stderr line is not in the gateway's log:\n%s", a.Output())
	}
}

func TestStdio_ProcessDyingMidCallGetsMinus32603AndIsReplaced(t *testing.T) {
	c := newStdioCluster(t, "{min: 1, max: 1}")
	a := c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	pid := cl.Call(a, "tools/call", map[string]any{"name": "files-pid"}).Text()

	r := cl.Request(a, "tools/call", map[string]any{"name": "files-crash"})
	e := r.Error()
	if e == nil || e.Code != -32603 || !strings.Contains(e.Message, `backend "files"`) || !strings.Contains(e.Message, "process exited") {
		t.Fatalf("call whose process died: %+v (status %d), want -32603 naming the backend", e, r.Status)
	}
	next := cl.Call(a, "tools/call", map[string]any{"name": "files-pid"}).Text()
	if next == "" || next == pid {
		t.Errorf("after the crash the call ran in process %q (the dead one was %s), want a new one", next, pid)
	}
	// The exit is logged once the process is reaped, maybe after the
	// call's answer.
	for _, want := range []string{"stdio backend process exited", "crash: exiting on request"} {
		if !testsupport.Eventually(t, 10*time.Second, func() bool { return strings.Contains(a.Output(), want) }) {
			t.Errorf("gateway log lacks %q", want)
		}
	}
	// And counted where an operator alerts on it: /metrics and /status.
	files := map[string]string{"vhost": "demo", "backend": "files"}
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		n, _ := testsupport.MetricValue(testsupport.ScrapeMetrics(t, a.URL), "mcpgw_stdio_process_crashes_total", files)
		return n == 1
	}) {
		t.Error("mcpgw_stdio_process_crashes_total{backend=files} did not reach 1")
	}
	fams := testsupport.ScrapeMetrics(t, a.URL)
	if n, _ := testsupport.MetricValue(fams, "mcpgw_stdio_process_starts_total", files); n != 2 {
		t.Errorf("mcpgw_stdio_process_starts_total = %v, want 2 (the first process and its replacement)", n)
	}
	idle := map[string]string{"vhost": "demo", "backend": "files", "state": "idle"}
	if n, ok := testsupport.MetricValue(fams, "mcpgw_stdio_processes", idle); !ok || n != 1 {
		t.Errorf(`mcpgw_stdio_processes{state="idle"} = %v (present %v), want 1`, n, ok)
	}
	res, err := http.Get(a.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), `"processes": {`) || !strings.Contains(string(body), `"crashed": 1`) {
		t.Errorf("/status does not show the pool's crash:\n%s", body)
	}
}

func TestStdio_PoolMaxBoundsConcurrentCalls(t *testing.T) {
	c := newStdioCluster(t, "{min: 0, max: 2}")
	a := c.start()
	cl := c.client("alice")
	cl.Initialize(a, nil)
	gate := filepath.Join(t.TempDir(), "gate")

	var wg sync.WaitGroup
	pids := make([]string, 3)
	for i := range pids {
		wg.Go(func() {
			r := cl.Request(a, "tools/call", map[string]any{"name": "files-wait", "arguments": map[string]any{"gate": gate}})
			if e := r.Error(); e != nil {
				t.Errorf("wait call: %+v", e)
				return
			}
			pids[i] = r.Text()
		})
	}
	started := func() int { m, _ := filepath.Glob(gate + ".started.*"); return len(m) }
	if !testsupport.Eventually(t, 15*time.Second, func() bool { return started() == 2 }) {
		t.Fatalf("%d calls started, want 2", started())
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	slices.Sort(pids)
	if distinct := slices.Compact(slices.Clone(pids)); len(distinct) != 2 {
		t.Errorf("three concurrent calls ran in processes %v, want two (pool max 2: the third waits for a free one)", pids)
	}
}

func TestStdio_ElicitationDuringACallReachesTheClientAcrossInstances(t *testing.T) {
	c := newStdioCluster(t, "{min: 0, max: 1}")
	a, b := c.start(), c.start()
	cl := c.client("alice")
	cl.Initialize(a, capsAll)

	s := cl.CallStreaming(a, 7, "tools/call", map[string]any{"name": "files-confirm", "arguments": map[string]any{"question": "proceed?"}})
	req := s.Next()
	if req.Method() != "elicitation/create" {
		t.Fatalf("first event %s, want the backend's elicitation", req.Data)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"ok":true}}}`, req.Msg["id"])
	if r := cl.Post(b, answer); r.Status != http.StatusAccepted {
		t.Fatalf("answer POSTed to the other instance: %d", r.Status)
	}
	if final := s.Next(); !strings.Contains(final.Data, "answer: accept") {
		t.Fatalf("final %s", final.Data)
	}

	// A client without the capability: the process gets -32601, the tool
	// reports it.
	other := c.client("bob")
	other.Initialize(b, nil)
	if got := other.Call(b, "tools/call", map[string]any{"name": "files-confirm", "arguments": map[string]any{"question": "?"}}).Text(); !strings.Contains(got, "elicitation failed") {
		t.Errorf("confirm for a client without elicitation: %q", got)
	}
}

// A default go-sdk client (it negotiates 2026-07-28) behind a balancer
// with no affinity: lists and calls reach the stdio backend, and its
// mid-call elicitation becomes input_required, whose retry (on whichever
// instance) resumes the call parked with its process.
func TestStdio_ANewRevisionClientThroughTheBalancer(t *testing.T) {
	c := newStdioCluster(t, "{min: 1, max: 2}")
	m := startModernCluster(t, c)
	a := &answers{}
	cs := m.connect("alice", mcp.NewClient(&mcp.Implementation{Name: "stdio-e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.elicit}))
	ctx := t.Context()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "files-confirm" }) {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files-confirm", Arguments: map[string]any{"question": "Proceed?"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "answer: accept" {
		t.Fatalf("files-confirm: %v %+v", err, res)
	}
	if q := a.questions(); !slices.Contains(q, "Proceed?") {
		t.Errorf("the client was asked %q", q)
	}
}
