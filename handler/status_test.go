package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// statusJSON mirrors GET /status's document, as an operator's script
// would decode it.
type statusJSON struct {
	GeneratedAt time.Time `json:"generated_at"`
	VHosts      []struct {
		Name     string          `json:"name"`
		Backends []backendStatus `json:"backends"`
	} `json:"vhosts"`
}

type statusMoment struct {
	At         time.Time `json:"at"`
	AgeSeconds float64   `json:"age_seconds"`
}

type backendStatus struct {
	Key             string        `json:"key"`
	Transport       string        `json:"transport"`
	State           string        `json:"state"`
	Generation      string        `json:"generation"`
	ProtocolVersion string        `json:"protocol_version"`
	LastDiscovery   *statusMoment `json:"last_discovery"`
	LastAnswer      *statusMoment `json:"last_answer"`
	LastFailure     *struct {
		statusMoment
		Op         string `json:"op"`
		Outcome    string `json:"outcome"`
		HTTPStatus int    `json:"http_status"`
		Code       int64  `json:"code"`
		Message    string `json:"message"`
	} `json:"last_failure"`
	ListCache *struct {
		TTLSeconds float64 `json:"ttl_seconds"`
		Pages      int64   `json:"pages"`
		Hits       uint64  `json:"hits"`
		Misses     uint64  `json:"misses"`
	} `json:"list_cache"`
}

// status fetches GET /status as JSON, with no token, Host or Origin
// checks in the way (like /metrics).
func (g *gw) status() statusJSON {
	g.t.Helper()
	r := g.do(req{method: http.MethodGet, path: "/status", sub: "-", headers: map[string]string{"Accept": "*/*", "Content-Type": ""}})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		g.t.Fatalf("GET /status: %d %s %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	var doc statusJSON
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		g.t.Fatalf("GET /status: %v: %s", err, r.body)
	}
	return doc
}

func (s statusJSON) backend(t *testing.T, vhost, key string) backendStatus {
	t.Helper()
	for _, vh := range s.VHosts {
		for _, b := range vh.Backends {
			if vh.Name == vhost && b.Key == key {
				return b
			}
		}
	}
	t.Fatalf("no backend %s/%s in the status", vhost, key)
	return backendStatus{}
}

// The status view follows what the instance learns: nothing before any
// request, each backend's protocol and discovery after a session opens,
// list-cache hits and misses, and a backend's failure as the client saw
// it, redacted (no URL), with the backend marked failing.
func TestStatus_JSONFollowsDiscoveryCacheAndFailure(t *testing.T) {
	g := startGateway(t, gwOptions{status: true, twoListCache: time.Minute})

	before := g.status()
	if len(before.VHosts) != 2 || before.VHosts[0].Name != "demo" || before.VHosts[1].Name != "other" {
		t.Fatalf("vhosts %+v", before.VHosts)
	}
	if b := before.backend(t, "demo", "gateway-one"); b.State != "unknown" || b.LastDiscovery != nil || b.Generation != "" {
		t.Errorf("before any request: %+v", b)
	}

	sid := g.initialize("alice", "demo")
	for range 2 {
		if r := g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`}); r.rpc.Error != nil {
			t.Fatalf("tools/list: %s", r.body)
		}
	}
	after := g.status()
	for _, key := range []string{"gateway-one", "gateway-two"} {
		b := after.backend(t, "demo", key)
		if b.State != "ok" || b.Generation != "session" || b.ProtocolVersion == "" || b.Transport != "streamable-http" {
			t.Errorf("%s after discovery: %+v", key, b)
		}
		if b.LastDiscovery == nil || b.LastDiscovery.AgeSeconds < 0 || b.LastDiscovery.AgeSeconds > 60 ||
			b.LastDiscovery.At.After(after.GeneratedAt) {
			t.Errorf("%s last discovery %+v (document at %v)", key, b.LastDiscovery, after.GeneratedAt)
		}
		if b.LastAnswer == nil || b.LastFailure != nil {
			t.Errorf("%s answer %+v failure %+v", key, b.LastAnswer, b.LastFailure)
		}
	}
	if b := after.backend(t, "other", "only"); b.State != "unknown" {
		t.Errorf("a vhost nobody used: %+v", b)
	}
	if c := after.backend(t, "demo", "gateway-one").ListCache; c != nil {
		t.Errorf("gateway-one has no list cache, status says %+v", c)
	}
	c := after.backend(t, "demo", "gateway-two").ListCache
	if c == nil || c.TTLSeconds != 60 || c.Pages != 1 || c.Misses != 1 || c.Hits != 1 {
		t.Errorf("gateway-two list cache %+v, want 1 page, 1 miss then 1 hit", c)
	}

	g.two.Close()
	r := g.do(req{session: sid, body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gateway-two-echo","arguments":{"text":"x"}}}`})
	if r.rpc.Error == nil || r.rpc.Error.Code != -32603 {
		t.Fatalf("call to a closed backend: %s", r.body)
	}
	failed := g.status()
	b := failed.backend(t, "demo", "gateway-two")
	f := b.LastFailure
	if b.State != "failing" || f == nil {
		t.Fatalf("after the failure: %+v", b)
	}
	if f.Code != -32603 || f.Outcome != "transport_error" || f.Op == "" || f.Message != r.rpc.Error.Message {
		t.Errorf("failure %+v, want -32603 transport_error with the client's message %q", f, r.rpc.Error.Message)
	}
	host := strings.TrimPrefix(strings.TrimSuffix(g.two.URL, "/mcp"), "http://")
	if strings.Contains(f.Message, host) || strings.Contains(f.Message, "http://") {
		t.Errorf("failure message shows the backend's address: %q", f.Message)
	}
	if f.At.Before(b.LastDiscovery.At) || f.AgeSeconds < 0 {
		t.Errorf("failure at %v age %v", f.At, f.AgeSeconds)
	}
	if one := failed.backend(t, "demo", "gateway-one"); one.State != "ok" {
		t.Errorf("gateway-one after gateway-two failed: %+v", one)
	}
}

// A browser gets a small HTML page (escaped); curl's */* and an explicit
// JSON preference get JSON.
func TestStatus_HTMLForABrowser(t *testing.T) {
	g := startGateway(t, gwOptions{status: true})
	g.initialize("alice", "demo")
	for _, c := range []struct{ accept, wantType string }{
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html"},
		{"*/*", "application/json"},
		{"application/json, text/html;q=0.5", "application/json"},
		{"", "application/json"},
	} {
		r := g.do(req{method: http.MethodGet, path: "/status", sub: "-", headers: map[string]string{"Accept": c.accept, "Content-Type": ""}})
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), c.wantType) {
			t.Errorf("Accept %q: %d %s", c.accept, r.status, r.header.Get("Content-Type"))
			continue
		}
		if c.wantType == "text/html" {
			for _, want := range []string{"<!doctype html>", "<h2>demo</h2>", "gateway-one", "gateway-two", `class="ok"`, "2025-11-25"} {
				if !strings.Contains(r.body, want) {
					t.Errorf("HTML page lacks %q:\n%s", want, r.body)
				}
			}
		}
	}
}

// /status is served only where it is enabled (beside /metrics), and only
// at its exact path.
func TestStatus_OnlyWhereEnabled(t *testing.T) {
	off := startGateway(t, gwOptions{})
	if r := off.do(req{method: http.MethodGet, path: "/status", sub: "-"}); r.status != http.StatusNotFound {
		t.Errorf("status disabled: GET /status %d", r.status)
	}
	on := startGateway(t, gwOptions{status: true})
	for _, path := range []string{"/servers/demo/status", "/status/x"} {
		if r := on.do(req{method: http.MethodGet, path: path, sub: "-"}); r.status == http.StatusOK {
			t.Errorf("GET %s: %d", path, r.status)
		}
	}
}

// A vhost's pattern check shows in both views: the policy's deny
// "*delete*" matches no tool of the demo backends.
func TestStatus_ShowsPatternsThatMatchNothing(t *testing.T) {
	g := startGateway(t, gwOptions{status: true, policy: true, watchPatterns: true})
	var body string
	ok := testsupport.Eventually(t, 20*time.Second, func() bool {
		body = g.do(req{method: http.MethodGet, path: "/status", sub: "-", headers: map[string]string{"Content-Type": ""}}).body
		return strings.Contains(body, `"complete": true`)
	})
	if !ok || !strings.Contains(body, `"field": "virtual_hosts.demo.access[1].deny[0]"`) || !strings.Contains(body, `"pattern": "*delete*"`) {
		t.Fatalf("/status JSON:\n%s", body)
	}
	html := g.do(req{method: http.MethodGet, path: "/status", sub: "-", headers: map[string]string{"Accept": "text/html", "Content-Type": ""}}).body
	for _, want := range []string{"Patterns that match nothing", "<code>virtual_hosts.demo.access[1].deny[0]</code> (deny): <code>*delete*</code>"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML page lacks %q:\n%s", want, html)
		}
	}
}
