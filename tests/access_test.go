package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Access by identity, end to end: gateway processes on one Redis, JWTs
// whose claims differ, 2025-era sessions and 2026-07-28 requests.

// accessRules: admins see everything; dev sees gateway-one but its
// increment and its resources, and gateway-two's resources; anyone else
// nothing.
const accessRules = `
      - when: "'admins' in claims.groups"
        allow: ["*"]
      - when: "'dev' in claims.groups"
        allow: ["gateway-one-*", "Public.Tool", "gateway-two-test://*"]
        deny: ["gateway-one-increment", "gateway-one-test://*"]
`

// accessConfig is the cluster's config with access rules (indented as the
// list under "access:") on the demo vhost.
func (c *cluster) accessConfig(rules string) string {
	return fmt.Sprintf(`%s  demo:
    access:%s
    backends:
      gateway-one:
        url: %s
        tool_name_aliases: {Public.Tool: get_stats}
      gateway-two:
        url: %s
`, configHead(), rules, c.backends["gateway-one"].URL, c.backends["gateway-two"].URL)
}

// groupClient is a 2025-era client of sub whose token says its groups.
func (c *cluster) groupClient(sub string, groups ...string) *testsupport.Client {
	return &testsupport.Client{T: c.t, Token: c.groupToken(sub, groups...)}
}

func (c *cluster) groupToken(sub string, groups ...string) string {
	claims := testsupport.StdClaims(sub)
	claims["groups"] = groups
	return testsupport.MintJWT(c.t, jwtSecret, claims)
}

// modernCall sends one 2026-07-28 request (no session) with token to
// the demo vhost.
func modernCall(t *testing.T, ep testsupport.Endpoint, token, method string, params map[string]any) *testsupport.Reply {
	t.Helper()
	return modernPost(t, ep, "demo", token, method, params)
}

// walkTools pages through tools/list, each page on the next endpoint, and
// returns every name and the cursors it was given.
func walkTools(t *testing.T, page func(ep testsupport.Endpoint, cursor string) map[string]any, eps ...testsupport.Endpoint) (names, cursors []string) {
	t.Helper()
	cursor := ""
	for i := 0; ; i++ {
		res := page(eps[i%len(eps)], cursor)
		for _, tool := range res["tools"].([]any) {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		next, _ := res["nextCursor"].(string)
		if next == "" {
			return names, cursors
		}
		cursors = append(cursors, next)
		cursor = next
		if i > 20 {
			t.Fatal("the walk does not end")
		}
	}
}

func legacyPage(cl *testsupport.Client) func(testsupport.Endpoint, string) map[string]any {
	return func(ep testsupport.Endpoint, cursor string) map[string]any {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		return cl.Call(ep, "tools/list", params).Result()
	}
}

func TestAccess_TwoCallersAcrossInstancesBothGenerations(t *testing.T) {
	c := newClusterWith(t, testsupport.BackendOptions{PageSize: 2})
	c.writeConfig(c.accessConfig(accessRules))
	a, b := c.start(), c.start()

	alice, bob := c.groupClient("alice", "admins"), c.groupClient("bob", "dev")
	alice.Initialize(a, nil)
	bob.Initialize(b, nil)

	allTools := []string{"Public.Tool", "gateway-one-echo", "gateway-one-increment", "gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"}
	bobTools := []string{"Public.Tool", "gateway-one-echo"}

	aliceNames, aliceCursors := walkTools(t, legacyPage(alice), a, b)
	bobNames, bobCursors := walkTools(t, legacyPage(bob), b, a)
	slices.Sort(aliceNames)
	slices.Sort(bobNames)
	if !slices.Equal(aliceNames, allTools) || !slices.Equal(bobNames, bobTools) {
		t.Fatalf("legacy lists:\nalice %v\nbob   %v", aliceNames, bobNames)
	}
	if len(aliceCursors) == 0 || len(bobCursors) == 0 {
		t.Fatalf("no pagination: alice %d cursors, bob %d", len(aliceCursors), len(bobCursors))
	}

	// Modern requests: same view per token, results private.
	modernPage := func(token string) func(testsupport.Endpoint, string) map[string]any {
		return func(ep testsupport.Endpoint, cursor string) map[string]any {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			r := modernCall(t, ep, token, "tools/list", params)
			res := r.Result()
			if res["cacheScope"] != "private" {
				t.Fatalf("modern tools/list cacheScope %v, want private", res["cacheScope"])
			}
			return res
		}
	}
	bobModern, _ := walkTools(t, modernPage(bob.Token), a, b)
	slices.Sort(bobModern)
	if !slices.Equal(bobModern, bobTools) {
		t.Fatalf("modern bob sees %v, want %v", bobModern, bobTools)
	}
	aliceModern, _ := walkTools(t, modernPage(alice.Token), b, a)
	if len(aliceModern) != len(allTools) {
		t.Fatalf("modern alice sees %v", aliceModern)
	}
	read := modernCall(t, a, bob.Token, "resources/read", map[string]any{"uri": "gateway-two-test://counter"}).Result()
	if read["cacheScope"] != "private" {
		t.Fatalf("modern resources/read cacheScope %v, want private", read["cacheScope"])
	}

	// Hidden names are refused exactly as names no backend owns: same
	// status, code and message (with the name swapped), both generations,
	// and no backend sees the call.
	for _, be := range c.backends {
		be.ResetCounts()
	}
	for _, tc := range []struct{ method, hidden, unknown string }{
		{"tools/call", "gateway-one-increment", "nosuch-increment"},
		{"tools/call", "gateway-two-echo", "nosuch-echo"},
		{"prompts/get", "gateway-two-greeting", "nosuch-greeting"},
		{"resources/read", "gateway-one-test://counter", "nosuch-test://counter"},
	} {
		field := "name"
		if tc.method == "resources/read" {
			field = "uri"
		}
		legacyHidden := bob.Request(a, tc.method, map[string]any{field: tc.hidden})
		legacyUnknown := bob.Request(b, tc.method, map[string]any{field: tc.unknown})
		modernHidden := modernCall(t, b, bob.Token, tc.method, map[string]any{field: tc.hidden})
		modernUnknown := modernCall(t, a, bob.Token, tc.method, map[string]any{field: tc.unknown})
		for _, pair := range []struct {
			gen             string
			hidden, unknown *testsupport.Reply
		}{{"legacy", legacyHidden, legacyUnknown}, {"modern", modernHidden, modernUnknown}} {
			h, u := pair.hidden.Error(), pair.unknown.Error()
			if h == nil || u == nil {
				t.Fatalf("%s %s: hidden %s / unknown %s", pair.gen, tc.hidden, pair.hidden.Body, pair.unknown.Body)
			}
			if pair.hidden.Status != pair.unknown.Status || h.Code != u.Code || h.Code != -32602 ||
				strings.Replace(h.Message, tc.hidden, tc.unknown, 1) != u.Message {
				t.Fatalf("%s %s told apart from an unknown name:\nhidden  %d %d %q\nunknown %d %d %q",
					pair.gen, tc.hidden, pair.hidden.Status, h.Code, h.Message, pair.unknown.Status, u.Code, u.Message)
			}
		}
	}
	for key, be := range c.backends {
		for _, m := range []string{"tools/call", "prompts/get", "resources/read"} {
			if n := be.Count(m); n != 0 {
				t.Fatalf("backend %s saw %d %s for hidden or unknown names", key, n, m)
			}
		}
	}
	// Visible names work for bob, aliased ones by either name.
	for _, name := range []string{"Public.Tool", "gateway-one-get_stats"} {
		bob.Call(b, "tools/call", map[string]any{"name": name})
		modernCall(t, a, bob.Token, "tools/call", map[string]any{"name": name}).Result()
	}

	// Cursors do not cross callers, whichever instance sees them.
	for _, tc := range []struct {
		cl     *testsupport.Client
		cursor string
	}{{bob, aliceCursors[0]}, {alice, bobCursors[0]}} {
		r := tc.cl.Request(b, "tools/list", map[string]any{"cursor": tc.cursor})
		if e := r.Error(); e == nil || e.Code != -32602 {
			t.Fatalf("another caller's cursor: %s", r.Body)
		}
	}
	r := modernCall(t, a, bob.Token, "tools/list", map[string]any{"cursor": aliceCursors[0]})
	if e := r.Error(); e == nil || e.Code != -32602 {
		t.Fatalf("modern: another caller's cursor: %s", r.Body)
	}
}

func TestAccess_ReloadChangesVisibilityAndABadReloadKeepsTheRules(t *testing.T) {
	c := newCluster(t)
	c.writeConfig(c.accessConfig(accessRules))
	a := c.start()
	bob := c.groupClient("bob", "dev")
	bob.Initialize(a, nil)
	if got := bob.Call(a, "tools/list", nil).ToolNames(); !slices.Equal(got, []string{"Public.Tool", "gateway-one-echo"}) {
		t.Fatalf("before the reload bob sees %v", got)
	}
	st := bob.Stream(a, "")
	st.NextRaw()

	c.writeConfig(c.accessConfig(`
      - when: "'dev' in claims.groups"
        allow: ["gateway-two-*"]
`))
	a.Signal(sighup)
	// A change of access rules is a change of the vhost's lists.
	if ev := st.Next(); ev.Method() != "notifications/tools/list_changed" {
		t.Fatalf("after the reload: %s", ev.Data)
	}
	want := []string{"gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"}
	if got := bob.Call(a, "tools/list", nil).ToolNames(); !slices.Equal(got, want) {
		t.Fatalf("after the reload bob sees %v, want %v", got, want)
	}

	c.writeConfig(c.accessConfig(`
      - when: "'dev' in claims.groupz.exists(g, g =="
        allow: ["*"]
`))
	a.Signal(sighup)
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(a.Output(), "config reload failed")
	}) {
		t.Fatalf("the bad reload was not reported:\n%s", a.Output())
	}
	if out := a.Output(); !strings.Contains(out, "virtual_hosts.demo.access[0].when") {
		t.Fatalf("the reload failure does not name the rule:\n%s", out)
	}
	if got := bob.Call(a, "tools/list", nil).ToolNames(); !slices.Equal(got, want) {
		t.Fatalf("after a bad reload bob sees %v, want the running rules' %v", got, want)
	}
}

func TestAccess_CELErrorAtStartNamesTheRule(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	cfg := `auth: {mode: none}
virtual_hosts:
  demo:
    access:
      - when: "'admins' in claims.groups"
        allow: ["*"]
      - when: "claims.level > 'x' +"
        allow: ["*"]
    backends:
      one: {url: "http://127.0.0.1:9/mcp"}
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", path, "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil {
		t.Fatalf("gateway started with a bad access rule:\n%s", out)
	}
	for _, want := range []string{"gateway.yaml", "virtual_hosts.demo.access[1].when", "invalid CEL expression", "(line 7)"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("start-up error does not say %q:\n%s", want, out)
		}
	}
}
