package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// OpenAPI backends end to end (issue 43): REST APIs described by OpenAPI,
// served by real REST servers from npm (Stoplight Prism mocking the
// Petstore, json-server behind tests/openapi/notes.yaml), through two
// gateway instances on one Redis behind a round-robin balancer, for a
// 2025-11-25 session and for 2026-07-28 requests. A recording proxy in
// front of each server keeps what the API received.

const (
	petstoreSpec = "@readme/oas-examples/3.0/json/petstore.json"
	e2eAPIKey    = "pets-key-e2e-PLUGH"
	e2eQueryKey  = "notes-query-key-XYZZY"
)

// specPath is a description shipped by an npm fixture.
func specPath(t *testing.T, rel string) string {
	t.Helper()
	_, p := interopNode(t, rel)
	return p
}

// operationIDs lists a description's operationIds, sorted.
func operationIDs(t *testing.T, spec string) []string {
	t.Helper()
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range doc.Paths {
		for m, raw := range item {
			switch m {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				var op struct{ OperationID string }
				_ = json.Unmarshal(raw, &op)
				ids = append(ids, op.OperationID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// toolResult is a tools/call result as a client reads it.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Type, Text string
	} `json:"content"`
}

func asToolResult(t *testing.T, r *testsupport.Reply) toolResult {
	t.Helper()
	m := r.Final()
	if m == nil || m.Error != nil {
		t.Fatalf("tools/call: status %d body %s", r.Status, r.Body)
	}
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOpenAPI_PetstoreAndJSONServerThroughTwoInstancesBothGenerations(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	pets := specPath(t, petstoreSpec)
	dir := t.TempDir()
	db := filepath.Join(dir, "db.json")
	if err := os.WriteFile(db, []byte(`{"notes":[{"id":1,"title":"one"},{"id":2,"title":"two"},{"id":3,"title":"three"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notesSpec, _ := filepath.Abs(filepath.Join("openapi", "notes.yaml"))
	prism, prismUp := launchPrism(t, pets)
	jsonServer := startJSONServer(t, db)
	prismUp()
	recPets, recNotes := startRecorder(t, prism), startRecorder(t, jsonServer)
	sts := testsupport.StartTokenEndpoint(t, "mcpgw", stsSecret, jwtSecret)

	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), config: filepath.Join(dir, "gateway.yaml")}
	c.writeConfig(fmt.Sprintf(`%s  demo:
    backends:
      pets:
        openapi: {spec: %q, base_url: %q}
        add_headers: {api_key: %q}
        credentials:
          client_credentials: {token_url: %q, client_id: mcpgw, client_secret_env: %s, audience: petstore}
      petsfail:
        openapi: {spec: %q, base_url: %q, operations: [getPetById]}
        add_headers: {api_key: k, Prefer: "code=500"}
      notes:
        openapi: {spec: %q, base_url: %q}
        add_headers: {access_key: %q, X-Tenant: "${claims.sub}"}
        credentials:
          token_exchange: {token_url: %q, client_id: mcpgw, client_secret_env: %s, audience: notes}
      tiny:
        openapi: {spec: %q, base_url: %q, operations: ["GET /notes"], max_response_bytes: 64}
`, configHead(), pets, recPets.URL, e2eAPIKey, sts.URL, stsSecretEnv, pets, prism,
		notesSpec, recNotes.URL, e2eQueryKey, sts.URL, stsSecretEnv, notesSpec, jsonServer))
	env := []string{jwtSecretEnv + "=" + string(jwtSecret), stsSecretEnv + "=" + stsSecret}
	a := testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL()}, env)
	b := testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL()}, env)
	lb := testsupport.StartRoundRobin(t, a.URL, b.URL)
	ep := testsupport.BaseURL(lb.URL)

	// A 2025-11-25 session: the tools listed are the selected operations.
	s := c.client("alice")
	s.Initialize(ep, nil)
	names := s.Call(ep, "tools/list", nil).ToolNames()
	var want []string
	for _, id := range operationIDs(t, pets) {
		want = append(want, "pets-"+id)
	}
	want = append(want, "petsfail-getPetById", "notes-notes_create", "notes-notes_delete", "notes-notes_get", "notes-notes_list", "notes-notes_update", "tiny-notes_list")
	sort.Strings(want)
	if sort.Strings(names); !slices.Equal(names, want) {
		t.Fatalf("tools/list:\n got %v\nwant %v", names, want)
	}

	// A query array, the API key header and the client-credentials token.
	res := asToolResult(t, s.Call(ep, "tools/call", map[string]any{"name": "pets-findPetsByStatus", "arguments": map[string]any{"status": []string{"available", "sold"}}}))
	got := recPets.last(t, "/pet/findByStatus")
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"result":[`) || got.RawQuery != "status=available&status=sold" || got.Header.Get("Api_key") != e2eAPIKey {
		t.Fatalf("findPetsByStatus: %+v; the API got %+v", res, got)
	}
	if info, err := sts.Verifier("petstore")(t.Context(), strings.TrimPrefix(got.Header.Get("Authorization"), "Bearer "), nil); err != nil || info.UserID != "client:mcpgw" {
		t.Errorf("the Petstore's Authorization is not the client-credentials token: %v %v", info, err)
	}
	// Arguments that fail the schema never reach the API.
	before := recPets.count()
	if r := s.Request(ep, "tools/call", map[string]any{"name": "pets-getPetById", "arguments": map[string]any{"petId": "seven"}}); r.Error() == nil || r.Error().Code != -32602 {
		t.Errorf("a string petId: %s", r.Body)
	}
	if recPets.count() != before {
		t.Error("arguments that fail the schema reached the API")
	}
	// A 5xx is a tool error carrying the status.
	if res := asToolResult(t, s.Call(ep, "tools/call", map[string]any{"name": "petsfail-getPetById", "arguments": map[string]any{"petId": 1}})); !res.IsError || !strings.Contains(res.Content[0].Text, "HTTP 500") {
		t.Errorf("a 500: %+v", res)
	}

	// 2026-07-28 requests, spread over both instances: json-server's CRUD.
	m := c.client("alice")
	call := func(name string, args map[string]any) toolResult {
		t.Helper()
		return asToolResult(t, m.ModernRequest(ep, "tools/call", map[string]any{"name": name, "arguments": args}, nil))
	}
	created := call("notes-notes_create", map[string]any{"body": map[string]any{"title": "from e2e", "tags": []string{"x", "y"}, "priority": 2}})
	var note struct{ ID int }
	if created.IsError || json.Unmarshal(created.StructuredContent, &note) != nil || note.ID != 4 {
		t.Fatalf("notes_create: %+v", created)
	}
	got = recNotes.last(t, "/notes")
	var sent map[string]any
	_ = json.Unmarshal([]byte(got.Body), &sent)
	if got.Method != "POST" || fmt.Sprint(sent) != "map[priority:2 tags:[x y] title:from e2e]" || got.Header.Get("X-Tenant") != "alice" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("the API got %+v", got)
	}
	if info, err := sts.Verifier("notes")(t.Context(), strings.TrimPrefix(got.Header.Get("Authorization"), "Bearer "), nil); err != nil || info.UserID != "alice" {
		t.Errorf("the notes API's Authorization is not alice's exchanged token: %v %v", info, err)
	}
	listed := call("notes-notes_list", map[string]any{"id": []int{1, 3}, "X-Request-Id": "req-42"})
	if got = recNotes.last(t, "/notes"); got.RawQuery != "id=1&id=3" || got.Header.Get("X-Request-Id") != "req-42" || strings.Count(string(listed.StructuredContent), `"id"`) != 2 {
		t.Errorf("notes_list: %+v; the API got %+v", listed, got)
	}
	if r := call("notes-notes_get", map[string]any{"id": 2}); r.IsError || recNotes.last(t, "/notes/2").RawQuery != "access_key="+e2eQueryKey || recNotes.last(t, "/notes/2").Header.Get("Access_key") != "" {
		t.Errorf("notes_get: %+v; the API got %+v", r, recNotes.last(t, "/notes/2"))
	}
	if r := call("notes-notes_update", map[string]any{"id": 2, "body": map[string]any{"title": "TWO"}}); r.IsError || recNotes.last(t, "/notes/2").Method != "PATCH" {
		t.Errorf("notes_update: %+v", r)
	}
	if r := call("notes-notes_delete", map[string]any{"id": 3}); r.IsError {
		t.Errorf("notes_delete: %+v", r)
	}
	if r := call("notes-notes_get", map[string]any{"id": 3}); !r.IsError || !strings.Contains(r.Content[0].Text, "HTTP 404") {
		t.Errorf("a deleted note: %+v", r)
	}
	// json-server's data file holds what the calls did.
	testsupport.Eventually(t, 10*time.Second, func() bool {
		data, _ := os.ReadFile(db)
		return strings.Contains(string(data), `"title": "from e2e"`) && strings.Contains(string(data), `"title": "TWO"`) && !strings.Contains(string(data), `"three"`)
	})
	// A response past max_response_bytes is refused.
	if r := call("tiny-notes_list", nil); !r.IsError || !strings.Contains(r.Content[0].Text, "max_response_bytes (64)") {
		t.Errorf("an oversized response: %+v", r)
	}
	if hits := lb.Hits(); len(hits) != 2 {
		t.Errorf("the balancer reached %d instances: %v", len(hits), hits)
	}
	assertNoSecrets(t, a.Output()+b.Output(), m)
	for _, out := range []string{a.Output(), b.Output()} {
		if strings.Contains(out, e2eAPIKey) || strings.Contains(out, e2eQueryKey) {
			t.Error("an API key is in a gateway's output")
		}
	}
}

func TestOpenAPI_Swagger2AndCircularSchemasOnPrism(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	pets2, circ := specPath(t, "@readme/oas-examples/2.0/json/petstore.json"), specPath(t, "@readme/oas-examples/3.0/json/schema-circular.json")
	mock2, up2 := launchPrism(t, pets2)
	mockCirc, upCirc := launchPrism(t, circ)
	up2()
	upCirc()
	rec2, recCirc := startRecorder(t, mock2), startRecorder(t, mockCirc)
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), config: filepath.Join(t.TempDir(), "gateway.yaml")}
	c.writeConfig(fmt.Sprintf(`%s  demo:
    backends:
      v2:
        openapi: {spec: %q, base_url: %q}
        add_headers: {api_key: k, Authorization: "Bearer static-e2e"}
      circ:
        openapi: {spec: %q, base_url: %q}
`, configHead(), pets2, rec2.URL, circ, recCirc.URL))
	gw := c.start()
	m := c.client("bob")
	r := asToolResult(t, m.ModernRequest(gw, "tools/call", map[string]any{"name": "v2-findPetsByStatus", "arguments": map[string]any{"status": []string{"available", "pending"}}}, nil))
	got := rec2.last(t, "/pet/findByStatus")
	if r.IsError || got.RawQuery != "status=available&status=pending" || got.Header.Get("Authorization") != "Bearer static-e2e" {
		t.Errorf("Swagger 2.0 findPetsByStatus: %+v; the API got %+v", r, got)
	}
	// A body whose schema refers to itself: its tool lists, validates
	// and sends it.
	tools := m.ModernRequest(gw, "tools/list", map[string]any{}, nil)
	if !strings.Contains(string(tools.Body), `#/$defs/`) {
		t.Fatalf("the circular schemas are not $defs references: %s", tools.Body)
	}
	body := map[string]any{"contentDisposition": map[string]any{"type": "form-data"}, "bodyParts": []any{map[string]any{"mediaType": map[string]any{}}}}
	r = asToolResult(t, m.ModernRequest(gw, "tools/call", map[string]any{"name": "circ-put_nestedTest", "arguments": map[string]any{"body": body}}, nil))
	if got := recCirc.last(t, "/nestedTest"); got.Method != "PUT" || !strings.Contains(got.Body, `"bodyParts"`) || r.IsError && !strings.Contains(r.Content[0].Text, "HTTP ") {
		t.Errorf("the circular body: %+v; the API got %+v", r, got)
	}
}

func TestOpenAPI_GatewayCheckNamesEachBadDescription(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	pets := specPath(t, petstoreSpec)
	notes, _ := filepath.Abs(filepath.Join("openapi", "notes.yaml"))
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte("openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {/a: {get: {responses: {'200': {$ref: '#/components/responses/Gone'}}}}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, block string
		says        []string
	}{
		{"unreadable", `{spec: missing.json, base_url: "http://127.0.0.1:9"}`, []string{"backends.api.openapi.spec", "cannot read the description", "(line 13)"}},
		{"invalid", fmt.Sprintf(`{spec: %q, base_url: "http://127.0.0.1:9"}`, invalid), []string{"backends.api.openapi.spec", "Gone"}},
		{"glob matching nothing", fmt.Sprintf(`{spec: %q, operations: ["notes/*", "issues/*"]}`, notes), []string{"backends.api.openapi.operations", `"issues/*" match no operation`}},
		{"unsatisfied scheme", fmt.Sprintf(`{spec: %q, base_url: "http://127.0.0.1:9"}`, pets), []string{"backends.api.openapi", `security scheme "petstore_auth"`, "addPet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "gateway-"+strings.ReplaceAll(c.name, " ", "-")+".yaml")
			cfg := configHead() + "  demo:\n    backends:\n      api:\n        openapi: " + c.block + "\n"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runBinary(t, bin, []string{jwtSecretEnv + "=" + string(jwtSecret)}, "check", "--config", path)
			if code != 1 || !strings.Contains(stderr, path) {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// The largest description served: GitHub's REST API (1,223 operations),
// mocked by Prism. Every operation is a tool, listed page by page on the
// gateway's cursors, and a call reaches the mock as described.
func TestOpenAPI_GitHubsDescriptionOnPrism(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	spec := specPath(t, "@octokit/openapi/generated/api.github.com.json")
	prism, prismUp := launchPrism(t, spec) // Node reads the description while the gateway does
	rec := startRecorder(t, prism)
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), config: filepath.Join(t.TempDir(), "gateway.yaml")}
	c.writeConfig(fmt.Sprintf(`%s  demo:
    backends:
      gh:
        openapi: {spec: %q, base_url: %q}
  search:
    tool_search: {results: 5}
    backends:
      gh:
        openapi: {spec: %q, base_url: %q}
`, configHead(), spec, rec.URL, spec, rec.URL))
	started := time.Now()
	// A bound, not a figure: the race-built gateway reading 13 MB took 3
	// minutes beside other tests on a busy 2-core machine (the log says).
	gw := testsupport.StartGatewayWithin(t, 5*time.Minute, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL()},
		[]string{jwtSecretEnv + "=" + string(jwtSecret)})
	t.Logf("a gateway with GitHub's description started in %s", time.Since(started).Round(time.Millisecond))
	prismUp()
	m := c.client("carol")
	var names []string
	started = time.Now()
	pages := 0
	for cursor := ""; ; pages++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r := m.ModernRequest(gw, "tools/list", params, nil)
		names = append(names, r.ToolNames()...)
		next, _ := r.Result()["nextCursor"].(string)
		if cursor = next; cursor == "" {
			break
		}
	}
	t.Logf("tools/list: %d tools in %d pages, %s", len(names), pages+1, time.Since(started).Round(time.Millisecond))
	ids := operationIDs(t, spec)
	if len(names) != len(ids) || !slices.Contains(names, "repos_get") || !slices.Contains(names, "issues_list-for-repo") {
		t.Fatalf("%d tools for %d operations", len(names), len(ids))
	}
	// A 2025-11-25 session pages through the same list.
	legacy := c.client("carol")
	legacy.Initialize(gw, nil)
	var legacyNames []string
	for cursor := ""; ; {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		res := legacy.Call(gw, "tools/list", params)
		legacyNames = append(legacyNames, res.ToolNames()...)
		if cursor, _ = res.Result()["nextCursor"].(string); cursor == "" {
			break
		}
	}
	if slices.Sort(legacyNames); len(legacyNames) != len(ids) || len(slices.Compact(slices.Clone(legacyNames))) != len(ids) {
		t.Fatalf("a 2025-11-25 session listed %d tools (%d distinct) of %d", len(legacyNames), len(slices.Compact(slices.Clone(legacyNames))), len(ids))
	}
	r := asToolResult(t, m.ModernRequest(gw, "tools/call", map[string]any{"name": "repos_get", "arguments": map[string]any{"owner": "octo cat", "repo": "hello"}}, nil))
	if got := rec.last(t, "/repos/"); r.IsError || got.Path != "/repos/octo%20cat/hello" || !strings.Contains(string(r.StructuredContent), `"full_name"`) {
		t.Errorf("repos_get: %+v; the API got %+v", r, got)
	}
	r = asToolResult(t, m.ModernRequest(gw, "tools/call", map[string]any{"name": "issues_list-for-repo", "arguments": map[string]any{"owner": "o", "repo": "r", "state": "closed", "per_page": 5}}, nil))
	if got := rec.last(t, "/repos/o/r/issues"); r.IsError || got.RawQuery != "state=closed&per_page=5" {
		t.Errorf("issues_list-for-repo: %+v; the API got %+v", r, got)
	}
	searchGitHub(t, c, gw, rec)
}

// searchGitHub searches GitHub's operations on the search vhost (a
// tool_search over the same description): a question finds the
// operation that answers it, in both generations, and call_tool calls it.
func searchGitHub(t *testing.T, c *cluster, gw testsupport.Endpoint, rec *recorder) {
	t.Helper()
	legacy := &testsupport.Client{T: t, Token: c.token("dave"), VHost: "search"}
	legacy.Initialize(gw, nil)
	modern := &testsupport.Client{T: t, Token: c.token("dave"), VHost: "search"}
	if got := modern.ModernRequest(gw, "tools/list", nil, nil).ToolNames(); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("the search vhost lists %v", got)
	}
	for _, q := range []struct{ query, want string }{
		{"list the issues of a repository", "issues_list-for-repo"},
		{"star a gist", "gists_star"},
		{"create a pull request review comment", "pulls_create-review-comment"},
	} {
		args := map[string]any{"name": "search_tools", "arguments": map[string]any{"query": q.query}}
		for name, r := range map[string]*testsupport.Reply{"2025": legacy.Call(gw, "tools/call", args), "2026-07-28": modern.ModernRequest(gw, "tools/call", args, nil)} {
			if found := foundTools(t, r); len(found) > 5 || !slices.Contains(found, q.want) {
				t.Errorf("%s: %q found %v, want %s among them", name, q.query, found, q.want)
			}
		}
	}
	r := asToolResult(t, modern.ModernRequest(gw, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{
		"name": "issues_list-for-repo", "arguments": map[string]any{"owner": "o", "repo": "searched", "state": "open"}}}, nil))
	if got := rec.last(t, "/repos/o/searched/issues"); r.IsError || got.RawQuery != "state=open" {
		t.Errorf("call_tool issues_list-for-repo: %+v; the API got %+v", r, got)
	}
}
