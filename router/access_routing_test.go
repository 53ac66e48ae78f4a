package router_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"

	"github.com/mcpgw/gateway/store"
)

// Two callers on one vhost of two backends, through two instances on one
// Redis: "admins" see everything, "dev" a part of gateway-one (its
// increment denied, get_stats by its alias) and gateway-two's template
// resources only; anyone else nothing.
var devRules = []policy.AccessRule{
	{When: "'admins' in claims.groups", Allow: []string{"*"}},
	{When: "'dev' in claims.groups",
		Allow: []string{"gateway-one-*", "Public.Tool", "gateway-two-test://template/*"},
		Deny:  []string{"gateway-one-increment"}},
}

var (
	adminClaims = map[string]any{"sub": "alice", "groups": []any{"admins"}}
	devClaims   = map[string]any{"sub": "bob", "groups": []any{"dev"}}
	nobody      = map[string]any{"sub": "carol"}
)

func compileRules(t testing.TB, rules []policy.AccessRule) *policy.AccessPolicy {
	t.Helper()
	p, err := policy.CompileAccess(rules)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// accessFixture is a fixture whose vhost has the rules, and a second
// instance on the same store.
func accessFixture(t *testing.T, rules []policy.AccessRule, specs ...backendSpec) (*fixture, *routertest.Instance) {
	t.Helper()
	f := newFixture(t, specs...)
	f.Config.Access = compileRules(t, rules)
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: f.Config})
	return f, f.NewInstance(routertest.Options{})
}

func twoBackendsWithAccess(t *testing.T, rules []policy.AccessRule) (*fixture, *routertest.Instance) {
	return accessFixture(t, rules,
		backendSpec{Key: "gateway-one", Aliases: map[string]string{"Public.Tool": "get_stats"}},
		backendSpec{Key: "gateway-two"},
	)
}

func field(t *testing.T, res map[string]any, list, key string) []string {
	t.Helper()
	var out []string
	for _, it := range res[list].([]any) {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}

func TestAccess_ListsDependOnTheCallersClaims(t *testing.T) {
	f, in2 := twoBackendsWithAccess(t, devRules)
	type lists struct{ tools, prompts, resources, templates []string }
	want := map[string]lists{
		"alice": {
			tools:     []string{"Public.Tool", "gateway-one-echo", "gateway-one-increment", "gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"},
			prompts:   []string{"gateway-one-greeting", "gateway-two-greeting"},
			resources: []string{"gateway-one-test://counter", "gateway-two-test://counter"},
			templates: []string{"gateway-one-test://template/{id}/data", "gateway-two-test://template/{id}/data"},
		},
		"bob": {
			tools:     []string{"Public.Tool", "gateway-one-echo"},
			prompts:   []string{"gateway-one-greeting"},
			resources: []string{"gateway-one-test://counter"},
			templates: []string{"gateway-one-test://template/{id}/data", "gateway-two-test://template/{id}/data"},
		},
		"carol": {},
	}
	for _, who := range []struct {
		sub    string
		claims map[string]any
	}{{"alice", adminClaims}, {"bob", devClaims}, {"carol", nobody}} {
		t.Run(who.sub, func(t *testing.T) {
			sid, _ := f.InitializeAs(who.sub, nil)
			// Every list on the other instance: nothing of the decision is
			// kept anywhere but in the request.
			got := lists{
				tools:     field(t, result(t, in2.CallClaims(t, sid, who.claims, "tools/list", nil)), "tools", "name"),
				prompts:   field(t, result(t, in2.CallClaims(t, sid, who.claims, "prompts/list", nil)), "prompts", "name"),
				resources: field(t, result(t, in2.CallClaims(t, sid, who.claims, "resources/list", nil)), "resources", "uri"),
				templates: field(t, result(t, in2.CallClaims(t, sid, who.claims, "resources/templates/list", nil)), "resourceTemplates", "uriTemplate"),
			}
			w := want[who.sub]
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"tools", got.tools, w.tools}, {"prompts", got.prompts, w.prompts}, {"resources", got.resources, w.resources}, {"templates", got.templates, w.templates}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

// A backend none of whose names the caller could see is not asked, and so
// never named as skipped either.
func TestAccess_BackendHiddenWholeIsNotAskedNorNamed(t *testing.T) {
	f, _ := twoBackendsWithAccess(t, []policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "'dev' in claims.groups", Allow: []string{"gateway-one-*", "Public.Tool"}},
	})
	bob, _ := f.InitializeAs("bob", nil)
	alice, _ := f.InitializeAs("alice", nil)
	f.Backends["gateway-two"].ResetCounts()
	f.Backends["gateway-two"].FailMethod("tools/list", -1)

	res := result(t, f.Instance.CallClaims(t, bob, devClaims, "tools/list", nil))
	if _, ok := res["_meta"]; ok {
		t.Fatalf("bob's list names skipped backends: %v", res["_meta"])
	}
	if n := f.Backends["gateway-two"].Count("tools/list"); n != 0 {
		t.Fatalf("gateway-two was asked %d times for bob's tools", n)
	}
	result(t, f.Instance.CallClaims(t, bob, devClaims, "resources/templates/list", nil))
	if n := f.Backends["gateway-two"].Count("resources/templates/list"); n != 0 {
		t.Fatalf("gateway-two asked %d times for bob's templates", n)
	}
	res = result(t, f.Instance.CallClaims(t, alice, adminClaims, "tools/list", nil))
	if !strings.Contains(toJSON(res["_meta"]), "gateway-two") {
		t.Fatalf("alice's list does not name the failed backend: %v", res["_meta"])
	}
}

// A hidden name gets exactly the answer of a name no backend owns, before
// any backend (or hook, or bound) sees it.
func TestAccess_HiddenNamesAreRefusedLikeUnknownOnes(t *testing.T) {
	f, in2 := twoBackendsWithAccess(t, devRules)
	bob, _ := f.InitializeAs("bob", nil)
	alice, _ := f.InitializeAs("alice", nil)
	for _, tc := range []struct {
		name, method string
		params       func(id string) map[string]any
		hidden       string
		unknown      string // the same kind of identifier, owned by no backend
	}{
		{"denied tool", "tools/call", func(id string) map[string]any { return map[string]any{"name": id} },
			"gateway-one-increment", "nosuch-increment"},
		{"tool of a hidden backend", "tools/call", func(id string) map[string]any { return map[string]any{"name": id} },
			"gateway-two-echo", "nosuch-echo"},
		{"prompt", "prompts/get", func(id string) map[string]any {
			return map[string]any{"name": id, "arguments": map[string]any{"name": "Pat"}}
		},
			"gateway-two-greeting", "nosuch-greeting"},
		{"resource", "resources/read", func(id string) map[string]any { return map[string]any{"uri": id} },
			"gateway-two-test://counter", "nosuch-test://counter"},
		{"subscription", "resources/subscribe", func(id string) map[string]any { return map[string]any{"uri": id} },
			"gateway-two-test://counter", "nosuch-test://counter"},
		{"prompt completion", "completion/complete", func(id string) map[string]any {
			return map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": id}, "argument": map[string]any{"name": "name", "value": "a"}}
		}, "gateway-two-greeting", "nosuch-greeting"},
		{"resource completion", "completion/complete", func(id string) map[string]any {
			return map[string]any{"ref": map[string]any{"type": "ref/resource", "uri": id}, "argument": map[string]any{"name": "id", "value": "1"}}
		}, "gateway-two-test://counter", "nosuch-test://counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range f.Backends {
				b.ResetCounts()
			}
			hidden := rpcErr(t, in2.CallClaims(t, bob, devClaims, tc.method, tc.params(tc.hidden)))
			unknown := rpcErr(t, in2.CallClaims(t, bob, devClaims, tc.method, tc.params(tc.unknown)))
			if hidden.Code != unknown.Code || strings.Replace(hidden.Message, tc.hidden, tc.unknown, 1) != unknown.Message {
				t.Fatalf("hidden: %d %q\nunknown: %d %q", hidden.Code, hidden.Message, unknown.Code, unknown.Message)
			}
			if hidden.Code != router.CodeInvalidParams {
				t.Fatalf("code %d, want -32602", hidden.Code)
			}
			for key, b := range f.Backends {
				if n := b.Count(tc.method); n != 0 {
					t.Fatalf("backend %s saw %d %s", key, n, tc.method)
				}
			}
			// The admin reaches the same name.
			if resp := f.Instance.CallClaims(t, alice, adminClaims, tc.method, tc.params(tc.hidden)); resp.Error != nil {
				t.Fatalf("admin refused: %v", resp.Error)
			}
		})
	}

	// Visible names route as ever, whichever name of an aliased tool is
	// used: the rules judge the name it is listed under.
	for _, name := range []string{"Public.Tool", "gateway-one-get_stats", "gateway-one-echo"} {
		if resp := in2.CallClaims(t, bob, devClaims, "tools/call", map[string]any{"name": name, "arguments": map[string]any{"text": "x"}}); resp.Error != nil {
			t.Fatalf("tools/call %s: %v", name, resp.Error)
		}
	}
	res := result(t, in2.CallClaims(t, bob, devClaims, "resources/read", map[string]any{"uri": "gateway-two-test://template/7/data"}))
	if !strings.Contains(toJSON(res), "data for 7") {
		t.Fatalf("read of a visible template resource: %v", res)
	}
}

func TestAccess_DenyingAnAliasHidesItsPrefixedNameToo(t *testing.T) {
	f, _ := twoBackendsWithAccess(t, []policy.AccessRule{{Allow: []string{"*"}, Deny: []string{"Public.Tool"}}})
	sid, _ := f.InitializeAs("bob", nil)
	for _, name := range []string{"Public.Tool", "gateway-one-get_stats"} {
		e := rpcErr(t, f.Instance.CallClaims(t, sid, devClaims, "tools/call", map[string]any{"name": name}))
		if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "unknown tool") {
			t.Fatalf("%s: %d %q", name, e.Code, e.Message)
		}
	}
	if n := f.Backends["gateway-one"].Count("tools/call"); n != 0 {
		t.Fatalf("gateway-one saw %d calls", n)
	}
}

// Pages are filtered after the backends' pages are merged: a page may
// come out short or empty, the walk still yields every visible item once,
// and a cursor neither shows nor serves anything beyond its owner's view.
func TestAccess_PaginationYieldsExactlyTheVisibleItems(t *testing.T) {
	rules := []policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{When: "'dev' in claims.groups", Allow: []string{"a-t02", "a-echo"}},
	}
	// "a" has 6 tools (echo, get_stats, increment, t00, t01, t02) in pages
	// of 2; "b" the same, hidden whole from dev.
	f, in2 := accessFixture(t, rules,
		backendSpec{Key: "a", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
		backendSpec{Key: "b", Opts: testsupport.BackendOptions{PageSize: 2, ExtraTools: 3}},
	)
	bob, _ := f.InitializeAs("bob", nil)
	alice, _ := f.InitializeAs("alice", nil)

	walk := func(sid store.SessionID, claims map[string]any) (all []string, cursors []string) {
		var params any
		for page := 0; ; page++ {
			in := f.Instance
			if page%2 == 1 {
				in = in2 // pages alternate between the instances
			}
			res := result(t, in.CallClaims(t, sid, claims, "tools/list", params))
			all = append(all, names(t, res, "tools")...)
			cur, ok := cursorOf(res)
			if !ok {
				return all, cursors
			}
			cursors = append(cursors, cur)
			params = map[string]any{"cursor": cur}
			if page > 10 {
				t.Fatal("the walk does not end")
			}
		}
	}
	f.Backends["b"].ResetCounts()
	got, bobCursors := walk(bob, devClaims)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a-echo", "a-t02"}) {
		t.Fatalf("bob walked %v, want [a-echo a-t02]", got)
	}
	if len(bobCursors) != 2 {
		t.Fatalf("bob's walk took %d cursors, want 2 (a's 3 pages)", len(bobCursors))
	}
	if n := f.Backends["b"].Count("tools/list"); n != 0 {
		t.Fatalf("the hidden backend was asked %d times during bob's walk", n)
	}
	for _, c := range bobCursors {
		raw, _ := base64.RawURLEncoding.DecodeString(c)
		for _, s := range []string{`"b"`, "t00", "t01", "get_stats", "increment"} {
			// A short string turns up in the base64 text of random bytes
			// now and then (1 run in about 300 found "t01"): the sealed
			// bytes are what must not hold it.
			if len(s) > 5 && strings.Contains(c, s) || strings.Contains(string(raw), s) {
				t.Fatalf("bob's cursor shows %q: %s", s, c)
			}
		}
	}

	all, aliceCursors := walk(alice, adminClaims)
	if len(all) != 12 {
		t.Fatalf("alice walked %d tools, want 12: %v", len(all), all)
	}
	// Cursors do not cross callers, in either direction.
	for _, tc := range []struct {
		sid    store.SessionID
		claims map[string]any
		cursor string
	}{{bob, devClaims, aliceCursors[0]}, {alice, adminClaims, bobCursors[0]}} {
		e := rpcErr(t, in2.CallClaims(t, tc.sid, tc.claims, "tools/list", map[string]any{"cursor": tc.cursor}))
		if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "invalid cursor") {
			t.Fatalf("another caller's cursor: %d %q", e.Code, e.Message)
		}
	}
}

// The list cache holds backend pages for every caller; what each caller
// sees of them is decided per request, after the cache.
func TestAccess_ListCacheIsSharedButFilteredPerCaller(t *testing.T) {
	cached := func(b *router.Backend) { b.ListCacheTTL = time.Hour }
	f, _ := accessFixture(t, devRules,
		backendSpec{Key: "gateway-one", Aliases: map[string]string{"Public.Tool": "get_stats"}, Adjust: cached},
		backendSpec{Key: "gateway-two", Adjust: cached},
	)
	alice, _ := f.InitializeAs("alice", nil)
	bob, _ := f.InitializeAs("bob", nil)
	f.Backends["gateway-one"].ResetCounts()
	if n := len(names(t, result(t, f.Instance.CallClaims(t, alice, adminClaims, "tools/list", nil)), "tools")); n != 6 {
		t.Fatalf("alice sees %d tools, want 6", n)
	}
	if got := names(t, result(t, f.Instance.CallClaims(t, bob, devClaims, "tools/list", nil)), "tools"); !slices.Equal(got, []string{"Public.Tool", "gateway-one-echo"}) {
		t.Fatalf("bob sees %v", got)
	}
	if n := len(names(t, result(t, f.Instance.CallClaims(t, alice, adminClaims, "tools/list", nil)), "tools")); n != 6 {
		t.Fatalf("alice sees %d tools after bob, want 6", n)
	}
	if n := f.Backends["gateway-one"].Count("tools/list"); n != 1 {
		t.Fatalf("gateway-one asked %d times, want 1 (cached)", n)
	}
}

func TestAccess_ReloadChangesVisibility(t *testing.T) {
	f, _ := twoBackendsWithAccess(t, devRules)
	bob, _ := f.InitializeAs("bob", nil)
	toolsOf := func() []string {
		return names(t, result(t, f.Instance.CallClaims(t, bob, devClaims, "tools/list", nil)), "tools")
	}
	if got := toolsOf(); !slices.Equal(got, []string{"Public.Tool", "gateway-one-echo"}) {
		t.Fatalf("before: %v", got)
	}
	same := *f.Config
	same.Access = compileRules(t, devRules)
	if changed := f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &same}); len(changed) != 0 {
		t.Fatalf("a reload with the same rules changed %v", changed)
	}
	next := *f.Config
	next.Access = compileRules(t, []policy.AccessRule{{When: "'dev' in claims.groups", Allow: []string{"gateway-two-*"}}})
	if changed := f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &next}); !slices.Equal(changed, []string{f.VHost}) {
		t.Fatalf("reload changed %v, want [%s]", changed, f.VHost)
	}
	if got := toolsOf(); !slices.Equal(got, []string{"gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"}) {
		t.Fatalf("after: %v", got)
	}
	if resp := f.Instance.CallClaims(t, bob, devClaims, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": "x"}}); resp.Error == nil {
		t.Fatal("a name hidden by the reload still routes")
	}
	none := *f.Config
	none.Access = nil
	f.Router.Reload(map[string]*router.VirtualHost{f.VHost: &none})
	if n := len(toolsOf()); n != 6 {
		t.Fatalf("without rules bob sees %d tools, want 6", n)
	}
}

// On a single-backend vhost names are not prefixed; the rules see them as
// published.
func TestAccess_SingleBackendVhost(t *testing.T) {
	f, _ := accessFixture(t, []policy.AccessRule{{Allow: []string{"echo", "test://template/*"}}},
		backendSpec{Key: "only"})
	sid, _ := f.InitializeAs("bob", nil)
	if got := names(t, result(t, f.Instance.CallClaims(t, sid, nil, "tools/list", nil)), "tools"); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("tools = %v", got)
	}
	if got := field(t, result(t, f.Instance.CallClaims(t, sid, nil, "resources/list", nil)), "resources", "uri"); len(got) != 0 {
		t.Fatalf("resources = %v", got)
	}
	e := rpcErr(t, f.Instance.CallClaims(t, sid, nil, "tools/call", map[string]any{"name": "increment"}))
	if e.Message != `unknown tool "increment": no backend of this virtual host owns it` {
		t.Fatalf("hidden tool: %q", e.Message)
	}
	if n := f.Backends["only"].Count("tools/call"); n != 0 {
		t.Fatalf("backend saw %d calls", n)
	}
}
