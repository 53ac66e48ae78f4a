package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// OpenAPI backends on Lambda (issue 43): a REST API described by OpenAPI
// (testdata/openapi/notes.yaml) served by a real json-server, behind the
// function, whose config and description ship in the bundle as `make
// build-GatewayFunction` lays them out (LAMBDA_CONFIG=deploy/gateway.yaml
// LAMBDA_EXTRA_FILES=deploy/specs/notes.yaml: each at its relative path,
// the working directory the bundle root). Two execution environments, the
// Function URL's and the HTTP API's, share one Redis: a 2025-11-25
// session's requests and sessionless 2026-07-28 requests alternate
// between them, and json-server's own data says what each call did.

// notesTools are the description's operations as the vhost's tools (its
// one backend: no prefix).
var notesTools = []string{"notes_create", "notes_get", "notes_list"}

// notesResult is a tools/call result as a client reads it.
type notesResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct{ Text string }
}

func asNotesResult(t *testing.T, r *testsupport.Reply) notesResult {
	t.Helper()
	m := r.Final()
	if r.Status != http.StatusOK || m == nil || m.Error != nil {
		t.Fatalf("tools/call: status %d body %.500s", r.Status, r.Body)
	}
	var res notesResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// writeBundle lays out a bundle in a new directory: deploy/gateway.yaml
// naming the description relative to itself, and the description at
// deploy/specs/notes.yaml. It returns the bundle root.
func writeBundle(t *testing.T, apiURL string) string {
	t.Helper()
	root := t.TempDir()
	spec, err := os.ReadFile(filepath.Join("testdata", "openapi", "notes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "deploy", "specs"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`allowed_hosts: [%s, %s]
auth:
  mode: jwt
  jwt: {issuer: %s, audience: %s, hs_secret_env: %s}
virtual_hosts:
  demo:
    backends:
      notes:
        openapi: {spec: specs/notes.yaml, base_url: %q}
`, functionURLDomain, httpAPIDomain, testsupport.JWTIssuer, testsupport.JWTAudience, jwtSecretEnv, apiURL)
	for name, data := range map[string][]byte{"deploy/gateway.yaml": []byte(cfg), "deploy/specs/notes.yaml": spec} {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// apiNote reads a note from json-server itself: what the calls stored.
func apiNote(t *testing.T, apiURL string, id int) string {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("%s/notes/%d", apiURL, id))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("json-server has no note %d: %d %s", id, res.StatusCode, body)
	}
	var n map[string]any
	if err := json.Unmarshal(body, &n); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(n)
}

// The function's init reads the bundled config and description (not
// parallel: the secrets, and the working directory, are the process's).
func TestOpenAPI_JSONServerThroughTheFunctionBothGenerations(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db.json")
	if err := os.WriteFile(db, []byte(`{"notes":[{"id":1,"title":"one"},{"id":2,"title":"two"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	api := testsupport.StartJSONServer(t, db)
	root := writeBundle(t, api)
	gateway := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")

	// Lambda runs the function in the bundle root; MCPGW_CONFIG is a path
	// in it, the description's path is relative to the config.
	t.Chdir(root)
	f := &fixture{t: t}
	env := map[string]string{envConfig: "deploy/gateway.yaml"}
	url := &inProcessURL{invoke: lambdaurl.Wrap(inProcessFunction(t, f, "url", env).handler)}
	httpAPI := &inProcessHTTPAPI{a: httpadapter.NewV2(inProcessFunction(t, f, "apigw-v2", env).handler)}

	// `gateway check --lambda` accepts the bundled config, as the init did.
	check := func() (string, error) {
		cmd := exec.Command(gateway, "check", "--lambda", "--config", "deploy/gateway.yaml")
		cmd.Env = append(os.Environ(), f.secrets()...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(); err != nil || !strings.Contains(out, "1 backend(s)") || !strings.Contains(out, "fits AWS Lambda") {
		t.Fatalf("gateway check --lambda: %v\n%s", err, out)
	}

	// A bundle without the description: the check and the init refuse
	// it, naming the field.
	if err := os.Rename("deploy/specs", "deploy/elsewhere"); err != nil {
		t.Fatal(err)
	}
	const missing = "deploy/gateway.yaml: virtual_hosts.demo.backends.notes.openapi.spec: cannot read the description"
	if out, err := check(); err == nil || !strings.Contains(out, missing) {
		t.Fatalf("gateway check --lambda without the description: %v\n%s", err, out)
	}
	_, err := setup(envMap(map[string]string{envConfig: "deploy/gateway.yaml", envRedisURL: redisSrv.URL()}), discardLogger())
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("init without the description: %v", err)
	}
	if err := os.Rename("deploy/elsewhere", "deploy/specs"); err != nil {
		t.Fatal(err)
	}

	t.Run("2025-11-25 session", func(t *testing.T) {
		c := f.client(t, "olga")
		c.Initialize(url, nil)
		call := func(ep testsupport.Endpoint, name string, args map[string]any) notesResult {
			t.Helper()
			return asNotesResult(t, c.Request(ep, "tools/call", map[string]any{"name": name, "arguments": args}))
		}
		checkNotesCalls(t, api, 3, "session",
			func() []string { return c.Call(httpAPI, "tools/list", nil).ToolNames() },
			func(name string, args map[string]any) notesResult { return call(url, name, args) },
			func(name string, args map[string]any) notesResult { return call(httpAPI, name, args) })
	})

	t.Run("2026-07-28 requests", func(t *testing.T) {
		c := f.client(t, "olga")
		call := func(ep testsupport.Endpoint, name string, args map[string]any) notesResult {
			t.Helper()
			r := c.ModernRequest(ep, "tools/call", map[string]any{"name": name, "arguments": args}, nil)
			if r.Header.Get("Mcp-Session-Id") != "" {
				t.Fatal("a 2026-07-28 request was given a session")
			}
			return asNotesResult(t, r)
		}
		checkNotesCalls(t, api, 4, "sessionless",
			func() []string { return c.ModernRequest(url, "tools/list", nil, nil).ToolNames() },
			func(name string, args map[string]any) notesResult { return call(httpAPI, name, args) },
			func(name string, args map[string]any) notesResult { return call(url, name, args) })
	})
}

// checkNotesCalls lists the tools, creates a note titled title (a body)
// through one environment, reads it back (a path parameter) and finds it
// by title (a query) through the other, checks json-server stored what
// was sent, and that a note json-server does not have is a tool error.
func checkNotesCalls(t *testing.T, api string, wantID int, title string, list func() []string, one, other func(string, map[string]any) notesResult) {
	t.Helper()
	if got := list(); !slices.Equal(slices.Sorted(slices.Values(got)), notesTools) {
		t.Fatalf("tools/list: %v, want %v", got, notesTools)
	}
	created := one("notes_create", map[string]any{"body": map[string]any{"title": title, "tags": []string{"lambda", "openapi"}}})
	var note struct{ ID int }
	if created.IsError || json.Unmarshal(created.StructuredContent, &note) != nil || note.ID != wantID {
		t.Fatalf("notes_create: %+v, want note %d", created, wantID)
	}
	if got, want := apiNote(t, api, wantID), fmt.Sprintf("map[id:%d tags:[lambda openapi] title:%s]", wantID, title); got != want {
		t.Errorf("json-server stored %s, want %s", got, want)
	}
	if got := other("notes_get", map[string]any{"id": wantID}); got.IsError || !strings.Contains(string(got.StructuredContent), `"title":"`+title+`"`) {
		t.Errorf("notes_get %d: %+v", wantID, got)
	}
	found := other("notes_list", map[string]any{"title": title})
	var notes struct{ Result []struct{ ID int } } // an array comes wrapped in an object
	if found.IsError || json.Unmarshal(found.StructuredContent, &notes) != nil || len(notes.Result) != 1 || notes.Result[0].ID != wantID {
		t.Errorf("notes_list title=%s: %+v, want only note %d", title, found, wantID)
	}
	if got := one("notes_get", map[string]any{"id": 99}); !got.IsError || len(got.Content) == 0 || !strings.Contains(got.Content[0].Text, "HTTP 404") {
		t.Errorf("a note json-server does not have: %+v, want an isError result with HTTP 404", got)
	}
}
