package router_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 request asks a backend server/discover first. Real servers
// of the session protocol answer that probe in many ways besides a
// JSON-RPC error (peers broke on each): HTTP 404, HTTP 400 with no
// JSON-RPC body, an empty 200, a dropped connection, or no answer until
// the backend's timeout. Each means "not a 2026-07-28 server": the
// gateway falls back to initialize and serves the backend.
func TestDiscovery_EveryOddAnswerToTheProbeFallsBackToInitialize(t *testing.T) {
	quirks := map[string]func(w http.ResponseWriter, r *http.Request){
		"404": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"400 no JSON": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Bad Request: unknown method", http.StatusBadRequest)
		},
		"empty 200":     func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) },
		"HTML 200":      func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") },
		"dropped":       func(w http.ResponseWriter, r *http.Request) { hijackClose(t, w) },
		"never answers": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
	}
	for name, quirk := range quirks {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, backendSpec{Key: "odd", Adjust: func(b *router.Backend) {
				b.URL = quirkyFront(t, b.URL, quirk)
				b.Timeout = 2 * time.Second
			}}, backendSpec{Key: "plain"})
			resp := f.Router.Handle(t.Context(), &router.Call{VHost: f.VHost, Principal: "alice",
				Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list"}, Caller: &router.ModernClient{}})
			res := result(t, resp)
			if tools := names(t, res, "tools"); !slices.Contains(tools, "odd-echo") || !slices.Contains(tools, "plain-echo") {
				t.Fatalf("tools/list after the probe was answered %s: %v, want both backends' tools", name, tools)
			}
			if got := f.Backends["odd"].Count("initialize"); got == 0 {
				t.Fatal("the backend was never initialized")
			}
		})
	}
}

// quirkyFront is a proxy to backend that answers server/discover with
// quirk and passes everything else.
func quirkyFront(t *testing.T, backend string, quirk func(http.ResponseWriter, *http.Request)) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"server/discover"`)) {
				quirk(w, r)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

func hijackClose(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}
