package demobackend_test

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/demobackend"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// start runs a demo backend for the duration of the test. It is not tied
// to t.Context(): that is cancelled before cleanups run, which would stop
// the server while the client's cleanup is still closing its session.
func start(t *testing.T, name string, opts demobackend.Options) string {
	t.Helper()
	url, stop, err := demobackend.Start(context.Background(), "127.0.0.1:0", name, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

func connect(t *testing.T, url string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, copts)
	cs, err := client.Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %v", name, text(res.Content))
	}
	return res
}

func text(content []mcp.Content) string {
	if len(content) == 0 {
		return ""
	}
	if tc, ok := content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// decode re-marshals a loosely typed value (structuredContent) into want.
func decode(t *testing.T, v, want any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
}

func stats(t *testing.T, cs *mcp.ClientSession) demobackend.Stats {
	t.Helper()
	var s demobackend.Stats
	decode(t, callTool(t, cs, "get_stats", nil).StructuredContent, &s)
	return s
}

func TestInitialize(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)
	init := cs.InitializeResult()
	if got, want := init.Instructions, "Demo backend alpha: a counter and an echo tool."; got != want {
		t.Errorf("instructions = %q, want %q", got, want)
	}
	if init.ServerInfo.Name != "alpha" {
		t.Errorf("serverInfo.name = %q", init.ServerInfo.Name)
	}
	c := init.Capabilities
	if c.Tools == nil || c.Prompts == nil || c.Resources == nil || c.Completions == nil || c.Logging == nil {
		t.Errorf("missing capabilities: %+v", c)
	}
	if c.Resources != nil && !c.Resources.Subscribe {
		t.Error("resources.subscribe not advertised")
	}
}

func TestWithoutPromptsAndResources(t *testing.T) {
	url := start(t, "bare", demobackend.Options{NoPrompts: true, NoResources: true, Instructions: "custom"})
	init := connect(t, url, nil).InitializeResult()
	c := init.Capabilities
	if c.Prompts != nil || c.Resources != nil || c.Completions != nil {
		t.Errorf("unexpected capabilities: prompts=%v resources=%v completions=%v", c.Prompts, c.Resources, c.Completions)
	}
	if c.Tools == nil {
		t.Error("tools capability missing")
	}
	if init.Instructions != "custom" {
		t.Errorf("instructions = %q", init.Instructions)
	}
}

func TestTools(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)

	res := callTool(t, cs, "increment", nil)
	if got := text(res.Content); got != "1" {
		t.Errorf("increment text = %q, want 1", got)
	}
	res = callTool(t, cs, "increment", map[string]any{"by": 5})
	var v demobackend.CounterValue
	decode(t, res.StructuredContent, &v)
	if v.Value != 6 || text(res.Content) != "6" {
		t.Errorf("increment by 5 = %v / %q, want 6", v.Value, text(res.Content))
	}
	if got := text(callTool(t, cs, "echo", map[string]any{"text": "hi there"}).Content); got != "hi there" {
		t.Errorf("echo = %q", got)
	}
	s := stats(t, cs)
	if s.Counter != 6 || s.Calls != 4 {
		t.Errorf("stats = %+v, want counter 6 and 4 calls", s)
	}

	// Bad arguments are tool errors, not protocol errors, and leave the
	// counter alone.
	for _, p := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: map[string]any{}},
		{Name: "increment", Arguments: map[string]any{"by": "two"}},
	} {
		res, err := cs.CallTool(t.Context(), p)
		if err != nil || !res.IsError {
			t.Errorf("%s %v: res=%v err=%v, want tool error", p.Name, p.Arguments, res, err)
		}
	}
	if got := stats(t, cs).Counter; got != 6 {
		t.Errorf("counter after bad calls = %d, want 6", got)
	}
}

func TestCounterIsPerServer(t *testing.T) {
	a := connect(t, start(t, "a", demobackend.Options{}), nil)
	b := connect(t, start(t, "b", demobackend.Options{}), nil)
	callTool(t, a, "increment", map[string]any{"by": 3})
	if got := stats(t, b).Counter; got != 0 {
		t.Errorf("counter of b = %d, want 0", got)
	}
}

func TestResources(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)
	ctx := t.Context()
	callTool(t, cs, "increment", map[string]any{"by": 7})

	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != "test://counter" || list.Resources[0].Name != "counter" {
		t.Errorf("resources = %+v", list.Resources)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://counter"})
	if err != nil {
		t.Fatal(err)
	}
	if c := read.Contents[0]; c.Text != "7" || c.MIMEType != "text/plain" {
		t.Errorf("counter contents = %+v", c)
	}

	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 ||
		templates.ResourceTemplates[0].URITemplate != "test://template/{id}/data" ||
		templates.ResourceTemplates[0].Name != "template-data" {
		t.Errorf("templates = %+v", templates.ResourceTemplates)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/abc/data"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read.Contents[0].Text; got != "data for abc" {
		t.Errorf("template read = %q", got)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://nope"}); err == nil {
		t.Error("reading an unknown resource succeeded")
	}
}

func TestSubscriptions(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)
	ctx := t.Context()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://counter"}); err != nil {
		t.Fatal(err)
	}
	if got := stats(t, cs).Subscriptions; !slices.Equal(got, []string{"test://counter"}) {
		t.Errorf("subscriptions after subscribe = %v", got)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://counter"}); err != nil {
		t.Fatal(err)
	}
	if got := stats(t, cs).Subscriptions; len(got) != 0 {
		t.Errorf("subscriptions after unsubscribe = %v", got)
	}
}

func TestPrompt(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)
	ctx := t.Context()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "greeting" ||
		len(list.Prompts[0].Arguments) != 1 || !list.Prompts[0].Arguments[0].Required {
		t.Errorf("prompts = %+v", list.Prompts)
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greeting", Arguments: map[string]string{"name": "Pat"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" ||
		res.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Pat!" {
		t.Errorf("messages = %+v", res.Messages)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greeting"}); err == nil {
		t.Error("greeting without name succeeded")
	}
}

func TestCompletion(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{}), nil)
	for _, tc := range []struct {
		ref        *mcp.CompleteReference
		arg, value string
		want       []string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "greeting"}, "name", "al", []string{"Alice", "Alicia"}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "greeting"}, "name", "", demobackend.GreetingNames},
		{&mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id", "", []string{"123", "456"}},
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "other"}, "name", "a", []string{}},
	} {
		res, err := cs.Complete(t.Context(), &mcp.CompleteParams{
			Ref:      tc.ref,
			Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value},
		})
		if err != nil {
			t.Fatalf("%+v: %v", tc.ref, err)
		}
		if !slices.Equal(res.Completion.Values, tc.want) {
			t.Errorf("complete %+v %s=%q = %v, want %v", tc.ref, tc.arg, tc.value, res.Completion.Values, tc.want)
		}
	}
}

func TestPagination(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{PageSize: 2}), nil)
	first, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q", len(first.Tools), first.NextCursor)
	}
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"echo", "get_stats", "increment"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

func TestExtraTools(t *testing.T) {
	cs := connect(t, start(t, "alpha", demobackend.Options{ExtraTools: 250}), nil)
	seen := map[string]bool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[tool.Name] {
			t.Errorf("tool %q listed twice", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Name != "echo" && tool.Name != "get_stats" && tool.Name != "increment" &&
			(tool.Description == "" || tool.InputSchema == nil) {
			t.Errorf("extra tool %q: description %q, schema %v", tool.Name, tool.Description, tool.InputSchema)
		}
	}
	if len(seen) != 253 {
		t.Errorf("%d tools listed, want 3 + 250", len(seen))
	}
	for _, name := range []string{"search_issues", "validate_dashboards", "search_issues_2"} {
		if !seen[name] {
			t.Errorf("%q not listed", name)
		}
	}
	res := callTool(t, cs, "search_issues", map[string]any{"query": "gateway"})
	if got, want := text(res.Content), `search_issues {"query":"gateway"}`; got != want {
		t.Errorf("search_issues = %q, want %q", got, want)
	}
}

func TestLogging(t *testing.T) {
	got := make(chan *mcp.LoggingMessageParams, 1)
	cs := connect(t, start(t, "alpha", demobackend.Options{}), &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { got <- req.Params },
	})
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "increment", nil)
	select {
	case msg := <-got:
		if msg.Level != "info" || msg.Logger != "demobackend" {
			t.Errorf("log message = %+v", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no log message")
	}
}

func TestStateless(t *testing.T) {
	url := start(t, "alpha", demobackend.Options{Stateless: true})
	// Each session is independent on the wire, but the counter is the
	// server's, so a second session sees the first one's increment.
	callTool(t, connect(t, url, nil), "increment", nil)
	cs := connect(t, url, nil)
	if cs.ID() != "" {
		t.Errorf("stateless backend issued session id %q", cs.ID())
	}
	if got := stats(t, cs).Counter; got != 1 {
		t.Errorf("counter = %d, want 1", got)
	}
}

func TestStopEndsEverything(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, stop, err := demobackend.Start(ctx, "127.0.0.1:0", "alpha", demobackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	// Keep the standalone SSE stream: stop must end hanging requests too.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "echo", map[string]any{"text": "x"})

	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop hangs")
	}
	stop() // idempotent
	cs.Close()
	hc.CloseIdleConnections()
	// goleak names what stop left running, with its stack.
	goleak.VerifyNone(t, before)
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err := demobackend.Start(ctx, "127.0.0.1:0", "alpha", demobackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cancel()
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		resp, err := http.Post(url, "application/json", nil)
		if err != nil {
			return true // refused: the server is gone
		}
		resp.Body.Close()
		return false
	}) {
		t.Fatal("server still answering after its context was cancelled")
	}
}

// Latency holds every POST: a session's handshake and call each wait at
// least that long (a lower bound, which a slow machine only raises).
func TestLatencyHoldsEveryPost(t *testing.T) {
	const latency = 30 * time.Millisecond
	url := start(t, "far", demobackend.Options{Latency: latency, Stateless: true})
	began := time.Now()
	cs := connect(t, url, nil) // initialize, then notifications/initialized
	callTool(t, cs, "echo", map[string]any{"text": "x"})
	if took := time.Since(began); took < 3*latency {
		t.Fatalf("three POSTs took %s, want at least %s", took, 3*latency)
	}
}

// InitDelay holds initialize only: the handshake waits at least that
// long, a call after it does not (bounds generous either way).
func TestInitDelayHoldsOnlyInitialize(t *testing.T) {
	const delay = 300 * time.Millisecond
	url := start(t, "slow-init", demobackend.Options{InitDelay: delay})
	began := time.Now()
	cs := connect(t, url, nil)
	if took := time.Since(began); took < delay {
		t.Fatalf("the handshake took %s, want at least %s", took, delay)
	}
	began = time.Now()
	callTool(t, cs, "echo", map[string]any{"text": "x"})
	if took := time.Since(began); took >= delay {
		t.Fatalf("a call took %s: it was held like initialize", took)
	}
}
