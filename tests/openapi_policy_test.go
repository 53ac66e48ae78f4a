package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// What the gateway does around a backend, done around a REST API as
// around an MCP server (issue 43): prefixes and an alias, access rules
// by the caller's groups, plugins on arguments and results, a rate limit
// per principal, and an audit line per call, through two instances on
// one Redis in both protocol generations, with json-server behind
// tests/openapi/notes.yaml and a recording proxy showing what reached
// the API (and what never did).

// openAPIPolicy is the demo vhost's policy: admins see everything,
// readers the alias and notes_get; a deny_pattern on arguments, redact
// on results; notes_get limited to 2 calls per principal per hour.
const openAPIPolicy = `    access:
      - when: "'admins' in claims.groups"
        allow: ["*"]
      - when: "'readers' in claims.groups"
        allow: ["Notes.Find", "notes-notes_get"]
    plugins:
      - type: deny_pattern
        in: arguments
        patterns: ["(?i)drop\\s+table"]
      - type: redact
        builtin: [email]
    rate_limits:
      - per: principal
        tools: ["notes-notes_get"]
        limit: 2
        window: 1h
`

// notesDB writes a json-server data file of three notes.
func notesDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "db.json")
	if err := os.WriteFile(db, []byte(`{"notes":[{"id":1,"title":"one"},{"id":2,"title":"two"},{"id":3,"title":"three"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return db
}

// notesSpecPath is the small description written for json-server.
func notesSpecPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("openapi", "notes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// callGen sends one request of one protocol generation, each to the next
// of the instances.
type callGen struct {
	name string
	do   func(method string, params map[string]any) *testsupport.Reply
}

// groupGenerations are a 2025 session and 2026-07-28 requests of sub in
// groups, alternating between eps.
func groupGenerations(t *testing.T, c *cluster, sub string, groups []string, eps ...testsupport.Endpoint) []callGen {
	legacy := c.groupClient(sub, groups...)
	n := 0
	next := func() testsupport.Endpoint { n++; return eps[n%len(eps)] }
	return []callGen{
		{"2025", func(method string, params map[string]any) *testsupport.Reply {
			if legacy.SessionID == "" {
				legacy.Initialize(next(), nil)
			}
			return legacy.Request(next(), method, params)
		}},
		{"2026-07-28", func(method string, params map[string]any) *testsupport.Reply {
			return modernCall(t, next(), legacy.Token, method, params)
		}},
	}
}

func toolCall(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// refused checks r is a JSON-RPC error with code, its message naming what.
func refused(t *testing.T, who string, r *testsupport.Reply, code int64, what string) {
	t.Helper()
	if e := r.Error(); e == nil || e.Code != code || !strings.Contains(e.Message, what) {
		t.Fatalf("%s: %d %s, want %d naming %q", who, r.Status, r.Body, code, what)
	}
}

func TestOpenAPI_AccessPluginsRateLimitsAndAuditBothGenerations(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	rec := startRecorder(t, startJSONServer(t, notesDB(t)))
	spec := notesSpecPath(t)
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), config: filepath.Join(t.TempDir(), "gateway.yaml")}
	c.writeConfig(fmt.Sprintf(`audit:
  output: stdout
%s  demo:
%s    backends:
      notes:
        openapi: {spec: %q, base_url: %q}
        add_headers: {access_key: k}
        tool_name_aliases: {Notes.Find: notes_list}
      archive:
        openapi: {spec: %q, base_url: %q, operations: ["notes/list"]}
`, configHead(), openAPIPolicy, spec, rec.URL, spec, rec.URL))
	start := func() *testsupport.GatewayProcess {
		return testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL(), "--log-format", "json"},
			[]string{jwtSecretEnv + "=" + string(jwtSecret)})
	}
	gws := []*testsupport.GatewayProcess{start(), start()}
	run := time.Now().UnixNano() // rate limits live in Redis: principals of this run's own
	type want struct{ principal, name, outcome, backend string }
	var wants []want
	adminTools := []string{"Notes.Find", "archive-notes_list", "notes-notes_create", "notes-notes_delete", "notes-notes_get", "notes-notes_update"}
	readerTools := []string{"Notes.Find", "notes-notes_get"}

	for i, g := range []string{"2025", "2026-07-28"} {
		admin, reader := fmt.Sprintf("ann-%d-%d", i, run), fmt.Sprintf("rob-%d-%d", i, run)
		ag := groupGenerations(t, c, admin, []string{"admins"}, gws[0], gws[1])[i]
		rg := groupGenerations(t, c, reader, []string{"readers"}, gws[1], gws[0])[i]
		t.Run(g, func(t *testing.T) {
			// The lists: prefixes, the alias in place of its tool, and
			// what each caller's rule lets them see.
			for _, w := range []struct {
				who   callGen
				tools []string
			}{{ag, adminTools}, {rg, readerTools}} {
				names := w.who.do("tools/list", map[string]any{}).ToolNames()
				if slices.Sort(names); !slices.Equal(names, w.tools) {
					t.Fatalf("tools/list: %v, want %v", names, w.tools)
				}
			}
			// The alias reaches the API as the operation it names.
			if r := ag.do("tools/call", toolCall("Notes.Find", map[string]any{"id": []int{1, 2}})); strings.Count(r.Text(), `"id"`) != 2 ||
				rec.last(t, "/notes").RawQuery != "id=1&id=2" {
				t.Fatalf("Notes.Find: %s; the API got %+v", r.Body, rec.last(t, "/notes"))
			}
			wants = append(wants, want{admin, "Notes.Find", audit.OutcomeOK, "notes"})

			// Refusals reach no API: a hidden tool, a denied pattern,
			// a third call within the hour.
			before := rec.count()
			refused(t, "a reader's notes_delete", rg.do("tools/call", toolCall("notes-notes_delete", map[string]any{"id": 1})), -32602, "notes-notes_delete")
			refused(t, "DROP TABLE", ag.do("tools/call", toolCall("notes-notes_create", map[string]any{"body": map[string]any{"title": "x; DROP  TABLE notes"}})), -32030, "plugins[0]")
			for range 2 {
				if r := rg.do("tools/call", toolCall("notes-notes_get", map[string]any{"id": 2})); !strings.Contains(r.Text(), `"two"`) {
					t.Fatalf("a reader's notes_get: %s", r.Body)
				}
				wants = append(wants, want{reader, "notes-notes_get", audit.OutcomeOK, "notes"})
			}
			r := rg.do("tools/call", toolCall("notes-notes_get", map[string]any{"id": 2}))
			refused(t, "a third notes_get", r, -32029, "rate_limits[0]")
			if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
				t.Fatalf("a third notes_get: HTTP %d Retry-After %q", r.Status, r.Header.Get("Retry-After"))
			}
			if got := rec.count() - before; got != 2 {
				t.Fatalf("the API got %d requests, want the 2 allowed notes_get", got)
			}
			wants = append(wants, want{reader, "notes-notes_delete", audit.OutcomeDenied, ""},
				want{admin, "notes-notes_create", audit.OutcomeDenied, ""}, want{reader, "notes-notes_get", audit.OutcomeRateLimited, ""})

			// redact on a REST answer: the API has the address, the
			// caller never sees it, in the text or the structured result.
			mail := fmt.Sprintf("ann-%d@example.com", i)
			r = ag.do("tools/call", toolCall("notes-notes_create", map[string]any{"body": map[string]any{"title": "write to " + mail}}))
			if res := r.Result(); strings.Contains(string(r.Body), mail) || !strings.Contains(r.Text(), "[REDACTED:email]") || res["isError"] == true {
				t.Fatalf("redact: %s", r.Body)
			}
			if got := rec.last(t, "/notes"); got.Method != http.MethodPost || !strings.Contains(got.Body, mail) {
				t.Fatalf("the API got %+v", got)
			}
			// An API's 404 is a tool error, audited as one.
			if r := ag.do("tools/call", toolCall("notes-notes_get", map[string]any{"id": 999})); r.Result()["isError"] != true || !strings.Contains(r.Text(), "HTTP 404") {
				t.Fatalf("a missing note: %s", r.Body)
			}
			wants = append(wants, want{admin, "notes-notes_create", audit.OutcomeOK, "notes"}, want{admin, "notes-notes_get", audit.OutcomeToolError, "notes"})
		})
	}
	var keys []string
	for _, w := range wants {
		keys = append(keys, w.principal+" "+w.name+" "+w.outcome+" "+w.backend)
	}
	checkOpenAPIAudit(t, gws, func(l map[string]any) bool { return strings.HasSuffix(str(l["principal"]), fmt.Sprint(run)) }, keys)
}

// checkOpenAPIAudit waits for the audit lines of the calls (those mine
// picks) and checks they are one per call, as wanted ("principal name
// outcome backend"), arguments hashed, never in clear.
func checkOpenAPIAudit(t *testing.T, gws []*testsupport.GatewayProcess, mine func(map[string]any) bool, wants []string) {
	t.Helper()
	var lines []map[string]any
	collect := func() bool {
		lines = lines[:0]
		for _, l := range auditLines(t, gws...) {
			if mine(l) && l["name"] != nil {
				lines = append(lines, l)
			}
		}
		return len(lines) >= len(wants)
	}
	testsupport.Eventually(t, 10*time.Second, collect)
	var got []string
	for _, l := range lines {
		got = append(got, str(l["principal"])+" "+str(l["name"])+" "+str(l["outcome"])+" "+str(l["backend"]))
		if b, _ := json.Marshal(l); l["arguments"] != nil || strings.Contains(string(b), "@example.com") {
			t.Errorf("an audit line holds arguments in clear: %s", b)
		}
		if l["outcome"] == audit.OutcomeOK && l["arguments_sha256"] == nil {
			t.Errorf("an audit line without the arguments' digest: %v", l)
		}
	}
	slices.Sort(got)
	slices.Sort(wants)
	if !slices.Equal(got, wants) {
		t.Fatalf("audit lines:\n got %q\nwant %q", got, wants)
	}
}
