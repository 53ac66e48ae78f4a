package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
)

func TestResourceMetadata_ChallengeNamesTheVHostDocument(t *testing.T) {
	g := startGateway(t, gwOptions{prm: &config.ResourceMetadata{
		AuthorizationServers: []string{"https://auth.example/realms/mcp"}, ScopesSupported: []string{"mcp", "mcp:tools"}}})
	r := g.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, sub: "-"})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d", r.status)
	}
	challenge := r.header.Get("WWW-Authenticate")
	wantURL := g.url + "/.well-known/oauth-protected-resource/servers/demo/mcp"
	for _, want := range []string{`Bearer realm="mcpgw"`, `resource_metadata="` + wantURL + `"`, `scope="mcp mcp:tools"`} {
		if !strings.Contains(challenge, want) {
			t.Fatalf("challenge %q lacks %s", challenge, want)
		}
	}

	doc := getJSON(t, wantURL, nil)
	if doc.Resource != g.url+"/servers/demo/mcp" || len(doc.AuthorizationServers) != 1 ||
		doc.AuthorizationServers[0] != "https://auth.example/realms/mcp" || doc.BearerMethods[0] != "header" {
		t.Fatalf("document %+v", doc)
	}
	if root := getJSON(t, g.url+"/.well-known/oauth-protected-resource", nil); root.Resource != g.url {
		t.Fatalf("root document resource %q, want the base URL", root.Resource)
	}
	// Behind a TLS-terminating proxy the URLs are https.
	if d := getJSON(t, wantURL, map[string]string{"X-Forwarded-Proto": "https"}); !strings.HasPrefix(d.Resource, "https://") {
		t.Fatalf("resource behind a proxy %q", d.Resource)
	}
	if code := statusOf(t, g.url+"/.well-known/oauth-protected-resource/servers/nope/mcp"); code != http.StatusNotFound {
		t.Fatalf("unknown vhost's document: %d", code)
	}
}

func TestResourceMetadata_PublicURLWins(t *testing.T) {
	g := startGateway(t, gwOptions{prm: &config.ResourceMetadata{
		AuthorizationServers: []string{"https://auth.example"}, PublicURL: "https://mcp.example.com/prod"}})
	r := g.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, sub: "-"})
	if c := r.header.Get("WWW-Authenticate"); !strings.Contains(c, `resource_metadata="https://mcp.example.com/prod/.well-known/oauth-protected-resource/servers/demo/mcp"`) || strings.Contains(c, "scope=") {
		t.Fatalf("challenge %q", c)
	}
	if d := getJSON(t, g.url+"/.well-known/oauth-protected-resource/servers/demo/mcp", nil); d.Resource != "https://mcp.example.com/prod/servers/demo/mcp" {
		t.Fatalf("resource %q", d.Resource)
	}
}

func TestResourceMetadata_AbsentUnlessConfigured(t *testing.T) {
	g := startGateway(t, gwOptions{})
	r := g.do(req{body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, sub: "-"})
	if c := r.header.Get("WWW-Authenticate"); c != `Bearer realm="mcpgw"` {
		t.Fatalf("challenge %q", c)
	}
	if code := statusOf(t, g.url+"/.well-known/oauth-protected-resource"); code != http.StatusNotFound {
		t.Fatalf("metadata served without configuration: %d", code)
	}
}

type prmDoc struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	Scopes               []string `json:"scopes_supported"`
	BearerMethods        []string `json:"bearer_methods_supported"`
}

func getJSON(t *testing.T, url string, hdr map[string]string) prmDoc {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: %d, CORS %q", url, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	var d prmDoc
	if err := json.NewDecoder(res.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func statusOf(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
