package upstream

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestBuildHeaders_Policy(t *testing.T) {
	downstream := http.Header{
		"Authorization":  {"Bearer client-token"},
		"Cookie":         {"sid=abc"},
		"X-Tenant":       {"acme", "beta"},
		"X-Trace":        {"t-1"},
		"X-Hop":          {"h"},
		"Connection":     {"X-Hop"},
		"Mcp-Session-Id": {"downstream-session"},
		"Content-Type":   {"text/plain"},
		"Host":           {"evil.example"},
		"Last-Event-Id":  {"9"},
	}
	tests := []struct {
		name string
		cfg  Config
		want http.Header
	}{
		{
			name: "nothing forwarded by default",
			cfg:  Config{},
			want: http.Header{},
		},
		{
			name: "passthrough copies all values",
			cfg:  Config{PassthroughHeaders: []string{"x-tenant", "X-Missing"}},
			want: http.Header{"X-Tenant": {"acme", "beta"}},
		},
		{
			name: "add overrides passthrough",
			cfg:  Config{PassthroughHeaders: []string{"X-Tenant"}, AddHeaders: map[string]string{"x-tenant": "fixed"}},
			want: http.Header{"X-Tenant": {"fixed"}},
		},
		{
			name: "remove wins over add and passthrough",
			cfg: Config{
				PassthroughHeaders: []string{"X-Tenant", "X-Trace"},
				AddHeaders:         map[string]string{"X-Trace": "added", "X-Extra": "1"},
				RemoveHeaders:      []string{"x-trace", "X-Extra"},
			},
			want: http.Header{"X-Tenant": {"acme", "beta"}},
		},
		{
			name: "downstream credentials never pass through",
			cfg:  Config{PassthroughHeaders: []string{"Authorization", "Cookie"}},
			want: http.Header{},
		},
		{
			name: "backend credentials come from add_headers",
			cfg:  Config{PassthroughHeaders: []string{"Authorization"}, AddHeaders: map[string]string{"Authorization": "Bearer backend"}},
			want: http.Header{"Authorization": {"Bearer backend"}},
		},
		{
			name: "protected headers neither passed nor added",
			cfg: Config{
				PassthroughHeaders: []string{"Mcp-Session-Id", "Content-Type", "Host", "Last-Event-ID", "Connection", "Transfer-Encoding"},
				AddHeaders: map[string]string{
					"Mcp-Session-Id": "x", "MCP-Protocol-Version": "x", "Accept": "x", "Content-Length": "1",
					"Host": "x", "Upgrade": "x", "Keep-Alive": "x", "TE": "x", "Last-Event-ID": "x", "Mcp-Param-Region": "x",
				},
			},
			want: http.Header{},
		},
		{
			name: "headers named in Connection are hop-by-hop",
			cfg:  Config{PassthroughHeaders: []string{"X-Hop"}},
			want: http.Header{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New(tt.cfg).BuildHeaders(downstream)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("BuildHeaders = %v, want %v", got, tt.want)
			}
		})
	}
	if got := New(Config{PassthroughHeaders: []string{"X-Tenant"}}).BuildHeaders(nil); len(got) != 0 {
		t.Errorf("nil downstream: %v", got)
	}
}

// The policy's result is what the backend sees, on every transport, and the
// transport's own headers cannot be displaced.
func TestConn_HeaderPolicyReachesBackend(t *testing.T) {
	for _, m := range []mode{modeStreamable, modeSSE} {
		t.Run(m.name, func(t *testing.T) {
			srv, rec := serve(t, newBackend(), m)
			c := New(Config{
				Key: testKey, URL: srv.URL, Transport: m.transport, Timeout: 10 * time.Second,
				PassthroughHeaders: []string{"X-Tenant", "X-Drop", "Authorization"},
				AddHeaders:         map[string]string{"Authorization": "Bearer backend-secret", "Accept": "text/html"},
				RemoveHeaders:      []string{"X-Drop"},
			})
			t.Cleanup(c.Close)
			downstream := http.Header{"Authorization": {"Bearer client-token"}, "X-Tenant": {"acme"}, "X-Drop": {"1"}}
			conn, err := c.Open(context.Background(), Handshake{}, downstream)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(false)
			if _, err := conn.Call(context.Background(), "tools/call", callParams(t, "echo", nil), nil); err != nil {
				t.Fatal(err)
			}
			exchanges := rec.exchanges()
			if len(exchanges) < 3 {
				t.Fatalf("only %d exchanges", len(exchanges))
			}
			for _, e := range exchanges {
				h := e.Header
				if !reflect.DeepEqual(h.Values("X-Tenant"), []string{"acme"}) ||
					!reflect.DeepEqual(h.Values("Authorization"), []string{"Bearer backend-secret"}) ||
					h.Get("X-Drop") != "" || h.Get("Accept") == "text/html" {
					t.Errorf("%s request headers: %v", e.Method, h)
				}
			}
		})
	}
}
