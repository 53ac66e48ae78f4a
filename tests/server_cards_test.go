package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Server Cards (SEP-2127) end to end: two gateway instances, three vhosts
// (one with card settings, one with the defaults, one opted out), every
// document validated against the card schema of the extension's
// repository and an AI Catalog schema (tests/testdata/servercard).

const cardsPublicURL = "https://gw.example.com"

// cardSchemas compiles the two schemas; card validates a card, catalog
// the catalog.
func cardSchemas(t *testing.T) (card, catalog *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for name, id := range map[string]string{"server-card.schema.json": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
		"ai-catalog.schema.json": "https://mcpgw.test/ai-catalog.schema.json"} {
		f, err := os.Open(filepath.Join("testdata", "servercard", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	card, err := c.Compile("https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json#/$defs/ServerCard")
	if err != nil {
		t.Fatal(err)
	}
	catalog, err = c.Compile("https://mcpgw.test/ai-catalog.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return card, catalog
}

func validate(t *testing.T, s *jsonschema.Schema, body []byte) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("%s does not validate: %v", body, err)
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return m
}

// getDoc sends a GET (or method) for path with headers to ep.
func getDoc(t *testing.T, ep testsupport.Endpoint, method, path string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res := ep.Do(t, req)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

func TestServerCards_EveryVHostInACatalogThatValidates(t *testing.T) {
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")}
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "b"})
	cfg := strings.Replace(configHead(), "virtual_hosts:\n", fmt.Sprintf(`  resource_metadata:
    authorization_servers: [https://idp.example.com]
public_url: %s
virtual_hosts:
`, cardsPublicURL), 1) + fmt.Sprintf(`  demo:
    card:
      name: com.example/demo-tools
      title: Demo tools
      description: Echo and counters for the demo
      version: 2.3.1
      website_url: https://example.com/demo
      icons: [{src: "https://example.com/icon.png", mime_type: image/png, sizes: [48x48], theme: light}]
    backends:
      b: {url: %[1]s}
  solo:
    backends:
      b: {url: %[1]s}
  internal:
    card: false
    backends:
      b: {url: %[1]s}
`, backend.URL)
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(cfg)
	a, b := c.start(), c.start()
	cardSchema, catalogSchema := cardSchemas(t)

	res, body := getDoc(t, a, http.MethodGet, "/.well-known/ai-catalog.json", nil)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/ai-catalog+json" {
		t.Fatalf("catalog: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	cat := validate(t, catalogSchema, body)
	var urls []string
	for _, e := range cat["entries"].([]any) {
		entry := e.(map[string]any)
		if entry["type"] != "application/mcp-server-card+json" || !strings.HasPrefix(entry["identifier"].(string), "urn:air:gw.example.com:mcp:") {
			t.Fatalf("entry %v", entry)
		}
		urls = append(urls, entry["url"].(string))
	}
	if want := []string{cardsPublicURL + "/servers/demo/mcp/server-card", cardsPublicURL + "/servers/solo/mcp/server-card"}; !slices.Equal(urls, want) {
		t.Fatalf("catalog lists %v, want %v (internal opted out)", urls, want)
	}

	// Each card, from the other instance, validates and says what the
	// gateway knows.
	for _, u := range urls {
		path := strings.TrimPrefix(u, cardsPublicURL)
		res, body := getDoc(t, b, http.MethodGet, path, map[string]string{"Accept": "application/mcp-server-card+json",
			"Authorization": "Bearer " + c.token("alice")})
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/mcp-server-card+json" {
			t.Fatalf("%s: %d %s %s", path, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		card := validate(t, cardSchema, body)
		vhost := strings.Split(path, "/")[2]
		remote := card["remotes"].([]any)[0].(map[string]any)
		versions := fmt.Sprint(remote["supportedProtocolVersions"])
		if remote["type"] != "streamable-http" || remote["url"] != cardsPublicURL+"/servers/"+vhost+"/mcp" ||
			!strings.Contains(versions, "2026-07-28") || !strings.Contains(versions, "2025-11-25") {
			t.Fatalf("%s remote %v", vhost, remote)
		}
		if fmt.Sprint(remote["authentication"]) != "map[required:true schemes:[bearer oauth2]]" ||
			card["_meta"].(map[string]any)["mcpgw/oauthProtectedResource"] != cardsPublicURL+"/.well-known/oauth-protected-resource/servers/"+vhost+"/mcp" {
			t.Fatalf("%s authorization: %v %v", vhost, remote["authentication"], card["_meta"])
		}
		for _, k := range []string{"tools", "resources", "prompts", "capabilities"} {
			if _, ok := card[k]; ok {
				t.Fatalf("%s card lists %s: cards describe, they list no primitives", vhost, k)
			}
		}
		// The well-known form is the same document.
		if _, again := getDoc(t, a, http.MethodGet, "/.well-known/mcp/server-card/"+vhost, nil); !bytes.Equal(again, body) {
			t.Fatalf("%s: the well-known card differs:\n%s\n%s", vhost, again, body)
		}
		switch vhost {
		case "demo":
			if card["name"] != "com.example/demo-tools" || card["title"] != "Demo tools" || card["version"] != "2.3.1" ||
				card["websiteUrl"] != "https://example.com/demo" || fmt.Sprint(card["icons"]) != "[map[mimeType:image/png sizes:[48x48] src:https://example.com/icon.png theme:light]]" {
				t.Fatalf("demo card %s: the configured fields", body)
			}
		case "solo":
			if card["name"] != "com.example.gw/solo" || card["title"] != "solo" || card["description"] == "" || card["version"] == "" {
				t.Fatalf("solo card %s: the defaults", body)
			}
		}
	}

	// Strong ETag, the same on every instance; a match is 304.
	res1, body1 := getDoc(t, a, http.MethodGet, "/servers/demo/mcp/server-card", nil)
	res2, _ := getDoc(t, b, http.MethodGet, "/servers/demo/mcp/server-card", nil)
	etag := res1.Header.Get("ETag")
	if etag == "" || strings.HasPrefix(etag, "W/") || etag != res2.Header.Get("ETag") || res1.Header.Get("Cache-Control") != "public, max-age=3600" {
		t.Fatalf("ETag %q and %q, Cache-Control %q", etag, res2.Header.Get("ETag"), res1.Header.Get("Cache-Control"))
	}
	if res, body := getDoc(t, b, http.MethodGet, "/servers/demo/mcp/server-card", map[string]string{"If-None-Match": `"other", ` + etag}); res.StatusCode != http.StatusNotModified || len(body) != 0 || res.Header.Get("ETag") != etag {
		t.Fatalf("revalidation: %d %q", res.StatusCode, body)
	}
	if res, body := getDoc(t, a, http.MethodGet, "/servers/demo/mcp/server-card", map[string]string{"If-None-Match": `"other"`}); res.StatusCode != 200 || !bytes.Equal(body, body1) {
		t.Fatalf("a stale ETag: %d", res.StatusCode)
	}
	if res, _ := getDoc(t, a, http.MethodGet, "/servers/demo/mcp/server-card", map[string]string{"Accept": "application/json"}); res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("a client that takes only application/json: %s", res.Header.Get("Content-Type"))
	}

	// CORS: a preflight from any origin, and the GET's headers.
	res, _ = getDoc(t, b, http.MethodOptions, "/servers/demo/mcp/server-card", map[string]string{
		"Origin": "https://app.example.org", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match"})
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "If-None-Match") || res.Header.Get("Access-Control-Allow-Methods") != "GET" {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	res, _ = getDoc(t, a, http.MethodGet, "/.well-known/ai-catalog.json", map[string]string{"Origin": "https://app.example.org"})
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "*" || res.Header.Get("Access-Control-Expose-Headers") != "ETag" {
		t.Fatalf("cross-origin GET: %d %v", res.StatusCode, res.Header)
	}

	// Opted out, or unknown: no card.
	for _, p := range []string{"/servers/internal/mcp/server-card", "/.well-known/mcp/server-card/internal", "/servers/nope/mcp/server-card"} {
		if res, _ := getDoc(t, a, http.MethodGet, p, nil); res.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", p, res.StatusCode)
		}
	}
	// The Host allow-list still applies.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimRight(a.URL, "/")+"/.well-known/ai-catalog.json", nil)
	req.Host = "evil.example"
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("a foreign Host: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}
