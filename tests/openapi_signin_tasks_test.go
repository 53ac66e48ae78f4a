package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// A REST API behind per-user sign-in, and a slow REST API run as
// gateway tasks (issue 43: "everything around it works as for an MCP
// backend"). The sign-in is the user_oauth rig's (tests/user_oauth_test.go:
// Ory Hydra as the gateway's issuer and as the third party, two
// instances behind a balancer); the slow API is json-server with its
// own --delay option. A recording proxy shows what reached the API.

// bearerSubject is the third party's subject of the bearer token a
// request carried, and whether the token is live.
func bearerSubject(t *testing.T, r *uoRig, got recorded) (string, bool) {
	t.Helper()
	token, ok := strings.CutPrefix(got.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		t.Fatalf("the API got no bearer token: %v", got.Header)
	}
	in, err := introspect(context.Background(), r.third, token)
	if err != nil {
		t.Fatal(err)
	}
	return in.Sub, in.Active
}

func TestOpenAPI_PerUserSignInReachesTheAPIAsTheUser(t *testing.T) {
	testsupport.SkipShort(t)
	// Not parallel, like every other Hydra test: the rig's code flow
	// once failed with invalid_grant beside GitHub's test on a loaded
	// machine.
	rec := startRecorder(t, startJSONServer(t, notesDB(t)))
	spec := notesSpecPath(t)
	r := startUserOAuthPlus(t, "", func(r *uoRig) string {
		return fmt.Sprintf(`  rest:
    backends:
      notes:
        openapi: {spec: %q, base_url: %q, operations: ["notes/list", "notes/create"]}
        credentials:
          user_oauth:
            issuer: %q
            client_id: mcpgw
            client_secret_env: E2E_UO_THIRD_SECRET
            token_endpoint_auth: client_secret_post
            scopes: [offline_access, repo]
`, spec, rec.URL, r.third.Issuer)
	})

	// The API's tools are listed before any sign-in; a call asks for it
	// (2026-07-28: input_required with a URL) and reaches no API.
	alice := &testsupport.Client{T: t, Token: r.aliceToken, VHost: "rest"}
	if names := alice.ModernRequest(r.lb, "tools/list", nil, urlCaps).ToolNames(); !slices.Equal(names, []string{"notes_create", "notes_list"}) {
		t.Fatalf("tools/list before sign-in: %v", names)
	}
	link, state, _ := r.modernCallTool("rest", "notes_list", nil, r.aliceToken, nil)
	if link == "" || rec.count() != 0 {
		t.Fatalf("a call before sign-in: link %q, the API got %d requests", link, rec.count())
	}
	if st, body := r.open(r.browser("alice", "alice-gh"), link); st != http.StatusOK || !strings.Contains(body, "Connected") {
		t.Fatalf("connect: %d %s", st, body)
	}
	_, _, res := r.modernCallTool("rest", "notes_list", nil, r.aliceToken, map[string]any{"requestState": state,
		"inputResponses": map[string]any{"mcpgw-sign-in": map[string]any{"action": "accept"}}})
	first := rec.last(t, "/notes")
	if sub, live := bearerSubject(t, r, first); res["isError"] == true || !strings.Contains(resultText(res), `\"three\"`) || sub != "alice-gh" || !live {
		t.Fatalf("after sign-in: %v; the API's token is %q's (live %v)", res, sub, live)
	}

	// 2025-11-25: bob's call is -32042 until he signs in; then the API
	// gets his own token, never alice's.
	bob := &testsupport.Client{T: t, Token: r.bobToken, VHost: "rest"}
	bob.Initialize(r.lb, urlCaps)
	create := map[string]any{"name": "notes_create", "arguments": map[string]any{"body": map[string]any{"title": "bob's"}}}
	rep := bob.Request(r.lb, "tools/call", create)
	var data struct{ Elicitations []struct{ URL string } }
	if e := rep.Error(); e == nil || e.Code != -32042 || json.Unmarshal(e.Data, &data) != nil || len(data.Elicitations) != 1 {
		t.Fatalf("2025-11-25 without a token: %d %s", rep.Status, rep.Body)
	}
	if st, body := r.open(r.browser("bob", "bob-gh"), data.Elicitations[0].URL); st != http.StatusOK {
		t.Fatalf("bob connects: %d %s", st, body)
	}
	if txt := bob.Call(r.lb, "tools/call", create).Text(); !strings.Contains(txt, `"bob's"`) {
		t.Fatalf("bob's notes_create: %s", txt)
	}
	if got := rec.last(t, "/notes"); got.Method != http.MethodPost {
		t.Fatalf("the API got %+v", got)
	} else if sub, _ := bearerSubject(t, r, got); sub != "bob-gh" {
		t.Fatalf("bob's call reached the API as %q", sub)
	}

	// Once alice's token has expired (3 s), her next call, on either
	// instance, reaches the API with a fresh one: refreshed, not asked.
	if !testsupport.Eventually(t, 20*time.Second, func() bool { _, live := bearerSubject(t, r, first); return !live }) {
		t.Fatal("alice's first token did not expire")
	}
	for range 2 {
		if l, _, res := r.modernCallTool("rest", "notes_list", nil, r.aliceToken, nil); l != "" || res["isError"] == true {
			t.Fatalf("after expiry: link %q result %v", l, res)
		}
		if sub, live := bearerSubject(t, r, rec.last(t, "/notes")); sub != "alice-gh" || !live {
			t.Fatalf("after expiry the API's token is %q's (live %v)", sub, live)
		}
	}
	for name, out := range map[string]string{"instance a": r.a.Output(), "instance b": r.b.Output()} {
		if strings.Contains(out, strings.TrimPrefix(first.Header.Get("Authorization"), "Bearer ")) || strings.Contains(out, uoThirdSecret) {
			t.Errorf("%s logged a secret", name)
		}
	}
}

// A long REST operation as a gateway task: json-server answering after
// its --delay, the task created through one instance and polled through
// the other; a cancel stops the HTTP request; a tool the config makes
// task-required is refused without the extension.
func TestOpenAPI_LongOperationRunsAsAGatewayTask(t *testing.T) {
	testsupport.SkipShort(t)
	t.Parallel() // its own servers, vhosts and principals: the Node servers start side by side
	rec := startRecorder(t, startJSONServer(t, notesDB(t), "--delay", "1500"))
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"), config: t.TempDir() + "/gateway.yaml"}
	c.writeConfig(fmt.Sprintf(`%s  jobs:
    backends:
      notes:
        openapi: {spec: %q, base_url: %q}
        add_headers: {access_key: k}
        tasks:
          optional: [notes_list]
          required: [notes_create]
          ttl: 5m
`, configHead(), notesSpecPath(t), rec.URL))
	a, b := c.start(), c.start()
	alice := &testsupport.Client{T: t, Token: c.token("alice"), VHost: "jobs"}
	support := map[string]any{}
	for _, tool := range alice.ModernRequest(b, "tools/list", nil, nil).Result()["tools"].([]any) {
		m := tool.(map[string]any)
		ex, _ := m["execution"].(map[string]any)
		support[m["name"].(string)] = ex["taskSupport"]
	}
	if support["notes_list"] != "optional" || support["notes_create"] != "required" || support["notes_get"] != nil {
		t.Fatalf("execution.taskSupport in tools/list: %v", support)
	}

	created := alice.ModernRequest(a, "tools/call", map[string]any{"name": "notes_list", "arguments": map[string]any{"id": []int{1, 3}}}, tasksCaps).Result()
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || created["status"] != "working" || id == "" {
		t.Fatalf("created: %v", created)
	}
	done := awaitTask(t, alice, b, id, hasStatus("completed"))
	res, _ := json.Marshal(done["result"])
	if !strings.Contains(string(res), `"structuredContent"`) || !strings.Contains(string(res), `three`) || rec.last(t, "/notes").RawQuery != "id=1&id=3" {
		t.Fatalf("completed with %s; the API got %+v", res, rec.last(t, "/notes"))
	}

	// Cancelled through A while the API is still answering: the HTTP
	// request is dropped.
	slow := alice.ModernRequest(b, "tools/call", map[string]any{"name": "notes_create", "arguments": map[string]any{"body": map[string]any{"title": "never"}}}, tasksCaps).Result()
	slowID, _ := slow["taskId"].(string)
	if slowID == "" {
		t.Fatalf("notes_create: %v", slow)
	}
	if !testsupport.Eventually(t, 10*time.Second, func() bool { return rec.last(t, "/notes").Method == http.MethodPost }) {
		t.Fatal("the API never got the POST")
	}
	alice.ModernRequest(a, "tasks/cancel", map[string]any{"taskId": slowID}, tasksCaps)
	select {
	case p := <-rec.Aborted:
		if p != "/notes" {
			t.Fatalf("aborted %s", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled task's HTTP request was not dropped")
	}
	awaitTask(t, alice, b, slowID, hasStatus("cancelled"))

	// Without the extension: the optional tool answers synchronously,
	// the required one is refused.
	if r := alice.ModernRequest(a, "tools/call", map[string]any{"name": "notes_list"}, nil).Result(); r["resultType"] != "complete" || r["taskId"] != nil {
		t.Fatalf("without the extension: %v", r)
	}
	if r := alice.ModernRequest(b, "tools/call", map[string]any{"name": "notes_create", "arguments": map[string]any{"body": map[string]any{"title": "x"}}}, nil); r.Error() == nil || r.Error().Code != -32021 {
		t.Fatalf("a required task tool without the extension: %d %s", r.Status, r.Body)
	}
}
