package router_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/skillserver"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/store"
)

// skillsFixture is a vhost over two go-sdk skills servers (package
// skillserver), keys "one" and "two", each listing one skill a page.
func skillsFixture(t *testing.T, rules []policy.AccessRule) (*fixture, store.SessionID) {
	t.Helper()
	specs := []backendSpec{
		{Key: "one", Opts: testsupport.BackendOptions{Skills: skillserver.FixtureOne, Stateless: true, PageSize: 1}},
		{Key: "two", Opts: testsupport.BackendOptions{Skills: skillserver.FixtureTwo, Stateless: true, PageSize: 1}},
	}
	var f *fixture
	if rules != nil {
		f, _ = accessFixture(t, rules, specs...)
	} else {
		f = newFixture(t, specs...)
	}
	sid, init := f.Initialize(nil)
	ext, _ := init["capabilities"].(map[string]any)["extensions"].(map[string]any)
	if routertest.ToJSON(ext[skillserver.Extension]) != `{"directoryRead":true}` {
		t.Fatalf("initialize extensions %v: the Skills extension, with directoryRead", ext)
	}
	return f, sid
}

// skillEntries walks skills/list and returns its entries by uri.
func skillEntries(t *testing.T, f *fixture, sid store.SessionID, claims map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	cursor := ""
	for page := 0; ; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		res := routertest.Result(t, f.Instance.CallClaims(t, sid, claims, "skills/list", params))
		for _, s := range res["skills"].([]any) {
			e := s.(map[string]any)
			out[e["uri"].(string)] = e
		}
		cursor, _ = res["nextCursor"].(string)
		if cursor == "" {
			return out
		}
		if page > 20 {
			t.Fatal("the walk does not end")
		}
	}
}

func TestSkills_ListMergedGetAndFilesRoutedByKey(t *testing.T) {
	f, sid := skillsFixture(t, nil)
	entries := skillEntries(t, f, sid, nil)
	var uris []string
	for u := range entries {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	want := []string{"skill://one/acme/billing/SKILL.md", "skill://one/acme/billing/refunds/SKILL.md",
		"skill://one/git-workflow/SKILL.md", "skill://two/git-workflow/SKILL.md", "skill://two/pdf-processing/SKILL.md"}
	if !slices.Equal(uris, want) {
		t.Fatalf("skills/list %v, want %v", uris, want)
	}
	refunds := entries["skill://one/acme/billing/refunds/SKILL.md"]
	if fm := refunds["frontmatter"].(map[string]any); fm["name"] != "refunds" || fm["allowed-tools"] != "ledger_lookup" {
		t.Fatalf("frontmatter %v: verbatim", fm)
	}

	// skills/get of each backend's skill: the same entry, and every file
	// it lists reads back through the gateway with its digest and size.
	for _, uri := range []string{"skill://one/acme/billing/SKILL.md", "skill://two/pdf-processing/SKILL.md"} {
		got := routertest.Result(t, f.Call(sid, "skills/get", map[string]any{"uri": uri}))["skill"].(map[string]any)
		if routertest.ToJSON(got) != routertest.ToJSON(entries[uri]) {
			t.Fatalf("skills/get %s = %v, the listed entry is %v", uri, got, entries[uri])
		}
		for _, r := range got["resources"].([]any) {
			file := r.(map[string]any)
			res := routertest.Result(t, f.Call(sid, "resources/read", map[string]any{"uri": file["uri"]}))
			c := res["contents"].([]any)[0].(map[string]any)
			text := c["text"].(string)
			if c["uri"] != file["uri"] || skillserver.Digest([]byte(text)) != file["digest"] || float64(len(text)) != file["size"] {
				t.Fatalf("%s read back as %v: digest or size does not verify against %v", file["uri"], c, file)
			}
		}
	}

	// The two git-workflow skills stay apart, each on its backend.
	for key, desc := range map[string]string{"one": "Follow this team", "two": "Trunk-based"} {
		got := routertest.Result(t, f.Call(sid, "skills/get", map[string]any{"uri": "skill://" + key + "/git-workflow/SKILL.md"}))
		if !strings.Contains(routertest.ToJSON(got), desc) {
			t.Fatalf("%s's git-workflow: %v", key, got)
		}
	}

	// Unknown skills, in the SEP's code.
	for _, uri := range []string{"skill://one/nope/SKILL.md", "skill://three/x/SKILL.md", "skill://one"} {
		if e := rpcErr(t, f.Call(sid, "skills/get", map[string]any{"uri": uri})); e.Code != -32602 {
			t.Fatalf("skills/get %s: %v, want -32602", uri, e)
		}
	}

	// resources/directory/read, routed and renamed.
	dir := routertest.Result(t, f.Call(sid, "resources/directory/read", map[string]any{"uri": "skill://two/pdf-processing/templates"}))
	var children []string
	for _, c := range dir["resources"].([]any) {
		children = append(children, c.(map[string]any)["uri"].(string))
	}
	wantChildren := []string{"skill://two/pdf-processing/templates/invoice.md", "skill://two/pdf-processing/templates/purchase-order.md",
		"skill://two/pdf-processing/templates/regional"}
	if !slices.Equal(children, wantChildren) {
		t.Fatalf("directory children %v, want %v", children, wantChildren)
	}
	if e := rpcErr(t, f.Call(sid, "resources/directory/read", map[string]any{"uri": "skill://two/pdf-processing/SKILL.md"})); e.Code != -32602 {
		t.Fatalf("a file read as a directory: %v", e)
	}
}

func TestSkills_AccessRulesHideASkillEverywhere(t *testing.T) {
	f, sid := skillsFixture(t, []policy.AccessRule{{Allow: []string{"skill://*"}, Deny: []string{"skill://one/acme/billing/refunds", "skill://one/acme/billing/refunds/*"}}})
	entries := skillEntries(t, f, sid, map[string]any{"sub": "alice"})
	if _, ok := entries["skill://one/acme/billing/refunds/SKILL.md"]; ok || len(entries) != 4 {
		t.Fatalf("entries %v: refunds is hidden, the four others are not", entries)
	}
	// Refused as a URI no backend owns is (a backend's own answer for a
	// URI it does not serve passes through, as for resources/read).
	hidden := f.Instance.CallClaims(t, sid, nil, "skills/get", map[string]any{"uri": "skill://one/acme/billing/refunds/SKILL.md"})
	unknown := f.Instance.CallClaims(t, sid, nil, "skills/get", map[string]any{"uri": "skill://six/acme/billing/refunds/SKILL.md"})
	he, ue := rpcErr(t, hidden), rpcErr(t, unknown)
	if he.Code != -32602 || strings.Replace(he.Message, "one", "six", 1) != ue.Message {
		t.Fatalf("hidden %v, unknown %v: told apart", he, ue)
	}
	dir := routertest.Result(t, f.Instance.CallClaims(t, sid, nil, "resources/directory/read", map[string]any{"uri": "skill://one/acme/billing"}))
	raw, _ := json.Marshal(dir)
	if strings.Contains(string(raw), "refunds") || !strings.Contains(string(raw), "skill://one/acme/billing/scripts") {
		t.Fatalf("directory %s: the hidden skill's directory is left out, the rest is listed", raw)
	}
}

func TestSkills_SingleBackendPassesThroughUnchanged(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "one", Opts: testsupport.BackendOptions{Skills: skillserver.FixtureOne, Stateless: true}})
	sid, _ := f.Initialize(nil)
	res := routertest.Result(t, f.Call(sid, "skills/list", nil))
	cat, err := skillserver.Load(skillserver.FixtureOne)
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, s := range cat.Skills() {
		want = append(want, s.Entry())
	}
	if routertest.ToJSON(res["skills"]) != routertest.ToJSON(want) {
		t.Fatalf("skills/list %v, the backend's own entries are %v", res["skills"], want)
	}
	got := routertest.Result(t, f.Call(sid, "skills/get", map[string]any{"uri": "skill://git-workflow/SKILL.md"}))
	if got["skill"].(map[string]any)["uri"] != "skill://git-workflow/SKILL.md" {
		t.Fatalf("skills/get %v", got)
	}
}
