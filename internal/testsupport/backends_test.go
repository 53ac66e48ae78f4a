package testsupport_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// probeTransport stamps each request with an increasing X-Probe header so
// that LastHeaders can be shown to hold the last request's headers.
type probeTransport struct{ n atomic.Int64 }

func (p *probeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Probe", strconv.FormatInt(p.n.Add(1), 10))
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, transport mcp.Transport) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustConnect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := connect(t, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func echo(t *testing.T, cs *mcp.ClientSession) error {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err == nil && res.IsError {
		t.Fatalf("echo: tool error %v", res.Content)
	}
	return err
}

func TestBackendRecordsMethodsHeadersAndDeletes(t *testing.T) {
	b := testsupport.StartBackend(t, testsupport.BackendOptions{})
	probe := &probeTransport{}
	cs, err := connect(t, &mcp.StreamableClientTransport{
		Endpoint:             b.URL,
		HTTPClient:           &http.Client{Transport: probe},
		DisableStandaloneSSE: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := echo(t, cs); err != nil {
			t.Fatal(err)
		}
	}
	for method, want := range map[string]int{"initialize": 1, "notifications/initialized": 1, "tools/call": 2, "tools/list": 0} {
		if got := b.Count(method); got != want {
			t.Errorf("Count(%q) = %d, want %d", method, got, want)
		}
	}
	if got, want := b.LastHeaders("tools/call").Get("X-Probe"), strconv.FormatInt(probe.n.Load(), 10); got != want {
		t.Errorf("last tools/call X-Probe = %q, want %q", got, want)
	}
	if got := b.LastHeaders("initialize").Get("X-Probe"); got != "1" {
		t.Errorf("initialize X-Probe = %q, want 1", got)
	}
	if b.LastHeaders("tools/list") != nil {
		t.Error("headers recorded for a method never sent")
	}

	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.Deletes(); got != 1 {
		t.Errorf("Deletes = %d, want 1", got)
	}
	b.ResetCounts()
	if b.Count("tools/call") != 0 || b.Deletes() != 0 || b.LastHeaders("tools/call") != nil {
		t.Error("ResetCounts left records behind")
	}
}

func TestBackendFailMethod(t *testing.T) {
	b := testsupport.StartBackend(t, testsupport.BackendOptions{})
	cs := mustConnect(t, b.URL)

	b.FailMethod("tools/call", 2)
	for i := range 2 {
		if err := echo(t, cs); err == nil {
			t.Fatalf("call %d succeeded, want injected 503", i)
		}
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("other methods must not fail: %v", err)
	}
	if err := echo(t, cs); err != nil {
		t.Fatalf("call after the failures ran out: %v", err)
	}
	if got := b.Count("tools/call"); got != 3 {
		t.Errorf("Count counts failed requests too: got %d, want 3", got)
	}

	b.FailMethod("tools/call", -1)
	for range 3 {
		if err := echo(t, cs); err == nil {
			t.Fatal("call succeeded while failing until cleared")
		}
	}
	b.ClearFailures()
	if err := echo(t, cs); err != nil {
		t.Fatalf("call after ClearFailures: %v", err)
	}
}

func TestBackendSetDown(t *testing.T) {
	b := testsupport.StartBackend(t, testsupport.BackendOptions{})
	b.SetDown(true)
	if _, err := connect(t, &mcp.StreamableClientTransport{Endpoint: b.URL, DisableStandaloneSSE: true}); err == nil {
		t.Fatal("connect succeeded while down")
	}
	if b.Count("initialize") != 1 {
		t.Errorf("Count(initialize) = %d, want 1", b.Count("initialize"))
	}
	resp, err := http.Get(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET while down = %d, want 503", resp.StatusCode)
	}

	b.SetDown(false)
	if err := echo(t, mustConnect(t, b.URL)); err != nil {
		t.Fatal(err)
	}
}

func TestBackendVariants(t *testing.T) {
	streamable := func(url string) mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}
	}
	for _, tc := range []struct {
		name       string
		opts       testsupport.BackendOptions
		transport  func(string) mcp.Transport
		wantTools  int
		wantPrompt bool
		wantSessID bool
	}{
		{"stateful", testsupport.BackendOptions{}, streamable, 3, true, true},
		{"stateless", testsupport.BackendOptions{Stateless: true}, streamable, 3, true, false},
		{"json", testsupport.BackendOptions{JSONResponse: true}, streamable, 3, true, true},
		{"legacy-sse", testsupport.BackendOptions{LegacySSE: true},
			func(url string) mcp.Transport { return &mcp.SSEClientTransport{Endpoint: url} }, 3, true, false},
		{"paged", testsupport.BackendOptions{ExtraTools: 5, PageSize: 2}, streamable, 8, true, true},
		{"bare", testsupport.BackendOptions{NoPrompts: true, NoResources: true, Instructions: "bare"}, streamable, 3, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testsupport.StartBackend(t, tc.opts)
			cs, err := connect(t, tc.transport(b.URL))
			if err != nil {
				t.Fatal(err)
			}
			if err := echo(t, cs); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, err := range cs.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != tc.wantTools {
				t.Errorf("%d tools, want %d", n, tc.wantTools)
			}
			if tc.opts.PageSize > 0 && b.Count("tools/list") != (n+tc.opts.PageSize-1)/tc.opts.PageSize {
				t.Errorf("%d tools/list pages for %d tools", b.Count("tools/list"), n)
			}
			init := cs.InitializeResult()
			if (init.Capabilities.Prompts != nil) != tc.wantPrompt || (init.Capabilities.Resources != nil) != tc.wantPrompt {
				t.Errorf("capabilities %+v, want prompts/resources %v", init.Capabilities, tc.wantPrompt)
			}
			if tc.opts.Instructions != "" && init.Instructions != tc.opts.Instructions {
				t.Errorf("instructions = %q", init.Instructions)
			}
			if (cs.ID() != "") != tc.wantSessID {
				t.Errorf("session id %q, want one: %v", cs.ID(), tc.wantSessID)
			}
			if b.Count("tools/call") != 1 {
				t.Errorf("Count(tools/call) = %d, want 1", b.Count("tools/call"))
			}
		})
	}
}

func TestBackendCloseIsIdempotent(t *testing.T) {
	b := testsupport.StartBackend(t, testsupport.BackendOptions{})
	mustConnect(t, b.URL)
	b.Close()
	b.Close()
	if _, err := http.Get(b.URL); err == nil {
		t.Error("backend still answering after Close")
	}
}
