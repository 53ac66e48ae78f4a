package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fe80::1": false, "fc00::1": false, "224.0.0.1": false,
		"::ffff:10.0.0.1": false, "::ffff:93.184.216.34": true,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
}

func TestIsDocumentID(t *testing.T) {
	for id, want := range map[string]bool{
		"https://app.example/client.json": true, "https://app.example/": false, "https://app.example": false,
		"http://app.example/client.json": false, "https://u:p@app.example/c": false, "https://app.example/c#x": false,
		"https://app.example/a/../c": false, "mcpgw-abc": false,
	} {
		if got := isDocumentID(id); got != want {
			t.Errorf("%s: %v, want %v", id, got, want)
		}
	}
}

// A metadata document over https: fetched once and cached, checked
// (its client_id is its URL, public client, redirect URIs); redirects
// are not followed; an oversized document is refused.
func TestMetadataDocuments(t *testing.T) {
	var hits atomic.Int32
	var base string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/ok.json":
			_, _ = w.Write([]byte(`{"client_id":"` + base + `/ok.json","client_name":"App","redirect_uris":["https://app.example/cb"]}`))
		case "/other.json":
			_, _ = w.Write([]byte(`{"client_id":"https://evil.example/c","redirect_uris":["https://app.example/cb"]}`))
		case "/secret.json":
			_, _ = w.Write([]byte(`{"client_id":"` + base + `/secret.json","token_endpoint_auth_method":"client_secret_basic","redirect_uris":["https://a.example/cb"]}`))
		case "/big.json":
			_, _ = w.Write([]byte(`{"client_id":"` + strings.Repeat("x", 6000) + `"}`))
		case "/moved.json":
			http.Redirect(w, r, "/ok.json", http.StatusFound)
		}
	}))
	defer srv.Close()
	base = srv.URL
	d := newMetadataDocs(true)
	d.hc.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	ctx := context.Background()
	c, err := d.client(ctx, base+"/ok.json")
	if err != nil || c.Name != "App" || c.Method != authNone || !c.redirectOK("https://app.example/cb") {
		t.Fatalf("ok: %+v %v", c, err)
	}
	if _, err := d.client(ctx, base+"/ok.json"); err != nil || hits.Load() != 1 {
		t.Fatalf("cached: %v, %d fetches", err, hits.Load())
	}
	for _, p := range []string{"/other.json", "/secret.json", "/big.json", "/moved.json"} {
		if _, err := d.client(ctx, base+p); err == nil {
			t.Errorf("%s accepted", p)
		}
	}
	// Loopback with the guard on: refused before connecting.
	before := hits.Load()
	if _, err := newMetadataDocs(false).client(ctx, base+"/ok.json"); !errors.Is(err, errPrivateAddress) || hits.Load() != before {
		t.Fatalf("loopback: %v, %d fetches", err, hits.Load()-before)
	}
}

func TestRedirectURIProblem(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://app.example/cb": true, "http://localhost:8080/cb": true, "http://127.0.0.1/cb": true,
		"com.example.app:/cb": true, "http://app.example/cb": false, "javascript:alert(1)": false,
		"https://app.example/cb#f": false, "myapp:/cb": false, "/relative": false,
	} {
		if got := redirectURIProblem(u) == ""; got != ok {
			t.Errorf("%s: ok %v, want %v (%s)", u, got, ok, redirectURIProblem(u))
		}
	}
}
