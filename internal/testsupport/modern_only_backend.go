package testsupport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport/modernonly"
)

// ModernOnlyBackend is the modern-only fixture server (package
// modernonly: it speaks 2026-07-28 and refuses the session protocol) on an
// httptest server, with a recorder in front, so translation tests can see
// what the gateway sent it: a 2025-era client's requests must reach it as
// 2026-07-28 requests carrying the session's _meta.
type ModernOnlyBackend struct {
	// URL is the MCP endpoint.
	URL string
	// Server is the fixture, for tests that change its resources.
	Server *modernonly.Server

	srv    *httptest.Server
	cancel context.CancelFunc

	mu      sync.Mutex
	counts  map[string]int             // by JSON-RPC method; "GET" etc. by HTTP method
	metas   map[string]json.RawMessage // the last params._meta, by method and by "tools/call <name>"
	changed chan struct{}              // closed and replaced on every request
}

// StartModernOnly starts a modern-only backend that is closed when the
// test ends.
func StartModernOnly(t testing.TB) *ModernOnlyBackend {
	t.Helper()
	b := &ModernOnlyBackend{Server: modernonly.New(modernonly.Options{}),
		counts: map[string]int{}, metas: map[string]json.RawMessage{}, changed: make(chan struct{})}
	// Request contexts derive from baseCtx, so that closing the backend
	// ends the listen streams httptest.Server.Close would wait for.
	baseCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.srv = httptest.NewUnstartedServer(b.record(b.Server.Handler()))
	b.srv.Config.BaseContext = func(net.Listener) context.Context { return baseCtx }
	b.srv.Start()
	b.URL = b.srv.URL + modernonly.Path
	t.Cleanup(func() {
		cancel()
		b.srv.Close()
	})
	return b
}

func (b *ModernOnlyBackend) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys := []string{r.Method}
		var meta json.RawMessage
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				http.Error(w, "testsupport: reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string          `json:"name"`
					Meta json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				keys = []string{msg.Method}
				if msg.Params.Name != "" {
					keys = append(keys, msg.Method+" "+msg.Params.Name)
				}
				meta = msg.Params.Meta
			}
		}
		b.mu.Lock()
		for _, k := range keys {
			b.counts[k]++
			if meta != nil {
				b.metas[k] = meta
			}
		}
		b.notifyLocked()
		b.mu.Unlock()
		if keys[0] == "subscriptions/listen" {
			w = &ackWatcher{ResponseWriter: w, onAck: func() {
				b.mu.Lock()
				defer b.mu.Unlock()
				b.counts[ListenAcknowledged]++
				b.notifyLocked()
			}}
		}
		next.ServeHTTP(w, r)
	})
}

func (b *ModernOnlyBackend) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Count reports how many requests of a JSON-RPC method (or "tools/call
// <name>" for one tool) reached the backend, refused ones included; for
// requests that are not JSON-RPC POSTs, the HTTP method ("GET"); and
// ListenAcknowledged, the listens it has acknowledged.
func (b *ModernOnlyBackend) Count(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts[key]
}

// WaitCount waits until Count(key) reaches n or timeout passes, and
// reports whether it did; it wakes on every request.
func (b *ModernOnlyBackend) WaitCount(key string, n int, timeout time.Duration) bool {
	return waitChanged(&b.mu, timeout, func() (bool, <-chan struct{}) { return b.counts[key] >= n, b.changed })
}

// LastMeta is the params._meta of the last request of key (as Count), nil
// when none came.
func (b *ModernOnlyBackend) LastMeta(key string) map[string]any {
	b.mu.Lock()
	raw := b.metas[key]
	b.mu.Unlock()
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}
