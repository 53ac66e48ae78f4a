package upstream

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpgw/gateway/router/credentials"
)

func mustTemplate(t *testing.T, s string) *credentials.Template {
	t.Helper()
	tpl, err := credentials.ParseTemplate(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// Claim templates are expanded from the caller the context carries, sit
// between add_headers and remove_headers in precedence, and a claim the
// caller lacks fails the open before anything is sent.
func TestRequestHeaders_ClaimTemplatesPerCaller(t *testing.T) {
	var hits atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		got.Store(r.Header.Clone())
		w.WriteHeader(http.StatusBadRequest) // the open itself is not the point
	}))
	defer srv.Close()
	c := New(Config{Key: "one", URL: srv.URL,
		PassthroughHeaders: []string{"X-User"},
		AddHeaders:         map[string]string{"X-Static": "s"},
		HeaderTemplates: map[string]*credentials.Template{
			"X-User": mustTemplate(t, "${claims.sub}"), "X-Org": mustTemplate(t, "org-${claims.org.id}"),
			"X-Gone": mustTemplate(t, "${claims.sub}"),
		},
		RemoveHeaders: []string{"X-Gone"},
	})
	defer c.Close()
	if !c.PerCaller() {
		t.Fatal("a client with claim templates is not per caller")
	}
	downstream := http.Header{"X-User": {"forged"}}

	ctx := credentials.WithCaller(t.Context(), credentials.Caller{Principal: "alice",
		Claims: map[string]any{"sub": "alice", "org": map[string]any{"id": "o-1"}}})
	_, _ = c.Open(ctx, Handshake{}, downstream)
	h, _ := got.Load().(http.Header)
	if h == nil || h.Get("X-User") != "alice" || h.Get("X-Org") != "org-o-1" || h.Get("X-Static") != "s" || h.Get("X-Gone") != "" {
		t.Fatalf("sent headers %v", h)
	}

	before := hits.Load()
	for _, claims := range []map[string]any{{"sub": "bob"}, {"sub": "bob\r\nX-Evil: 1", "org": map[string]any{"id": "o"}}} {
		ctx := credentials.WithCaller(t.Context(), credentials.Caller{Principal: "bob", Claims: claims})
		_, err := c.Open(ctx, Handshake{}, downstream)
		var ue *Error
		if !errors.As(err, &ue) || ue.Backend != "one" || !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "header X-") {
			t.Fatalf("open with unfillable claims: %v", err)
		}
		if strings.Contains(err.Error(), "bob") {
			t.Fatalf("error %q holds a claim value", err)
		}
		if err := c.Authorize(ctx); err == nil {
			t.Fatal("Authorize accepted unfillable claims")
		}
	}
	if hits.Load() != before {
		t.Fatal("a request reached the backend although its headers could not be built")
	}
}
