package router_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
)

func twoBackends(t *testing.T) *fixture {
	return newFixture(t,
		backendSpec{Key: "gateway-one", Aliases: map[string]string{"Public.Tool": "get_stats"}},
		backendSpec{Key: "gateway-two"},
	)
}

func TestRouting_ExactPrefixReachesBackend(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)

	res := result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment", "arguments": map[string]any{"by": 5}}))
	if got := text(t, res); !strings.Contains(got, "5") {
		t.Fatalf("increment result %q", got)
	}
	if n := f.Backends["gateway-one"].Count("tools/call"); n != 1 {
		t.Fatalf("gateway-one saw %d tools/call, want 1", n)
	}
	if n := f.Backends["gateway-two"].Count("tools/call"); n != 0 {
		t.Fatalf("gateway-two saw %d tools/call, want 0", n)
	}

	e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-oneincrement"}))
	if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, "gateway-oneincrement") {
		t.Fatalf("got %d %q, want -32602 naming the identifier", e.Code, e.Message)
	}
}

func TestRouting_MultiBackendListsArePrefixedAndSorted(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)

	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	want := []string{"Public.Tool", "gateway-one-echo", "gateway-one-increment", "gateway-two-echo", "gateway-two-get_stats", "gateway-two-increment"}
	if !slices.Equal(tools, want) {
		t.Fatalf("tools = %v, want %v", tools, want)
	}

	res := result(t, f.Call(sid, "resources/list", nil))
	uris := []string{}
	for _, r := range res["resources"].([]any) {
		uris = append(uris, r.(map[string]any)["uri"].(string))
	}
	if !slices.Contains(uris, "gateway-one-test://counter") || !slices.Contains(uris, "gateway-two-test://counter") {
		t.Fatalf("resource URIs not prefixed: %v", uris)
	}
	tmpl := result(t, f.Call(sid, "resources/templates/list", nil))["resourceTemplates"].([]any)
	if u := tmpl[0].(map[string]any)["uriTemplate"].(string); !strings.HasPrefix(u, "gateway-one-test://template/") {
		t.Fatalf("template URI not prefixed: %q", u)
	}
	prompts := names(t, result(t, f.Call(sid, "prompts/list", nil)), "prompts")
	if !slices.Equal(prompts, []string{"gateway-one-greeting", "gateway-two-greeting"}) {
		t.Fatalf("prompts = %v", prompts)
	}
}

func TestRouting_SingleBackendPassesIdentifiersThrough(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "only"})
	sid, _ := f.Initialize(nil)

	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	if !slices.Contains(tools, "increment") || !slices.Contains(tools, "echo") {
		t.Fatalf("tools = %v, want unprefixed names", tools)
	}
	res := result(t, f.Call(sid, "resources/read", map[string]any{"uri": "test://template/123/data"}))
	c := res["contents"].([]any)[0].(map[string]any)
	if c["uri"] != "test://template/123/data" || !strings.Contains(c["text"].(string), "123") {
		t.Fatalf("read result %v", c)
	}
	res = result(t, f.Call(sid, "prompts/get", map[string]any{"name": "greeting", "arguments": map[string]string{"name": "Ada"}}))
	if !strings.Contains(toJSON(res), "Hello, Ada!") {
		t.Fatalf("prompt result %v", res)
	}
}

func TestAliases_AdvertisedAndRouted(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)

	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	if !slices.Contains(tools, "Public.Tool") || slices.Contains(tools, "gateway-one-get_stats") {
		t.Fatalf("alias must replace the prefixed name in tools/list: %v", tools)
	}
	before := f.Backends["gateway-one"].Count("tools/call")
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "Public.Tool"}))
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-get_stats"}))
	if got := f.Backends["gateway-one"].Count("tools/call") - before; got != 2 {
		t.Fatalf("gateway-one saw %d calls, want 2 (alias and prefixed name)", got)
	}
	// Alias lookup is exact: case matters.
	rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "public.tool"}))
}

func TestRouting_PromptResourceCompletionThroughPrefixedBackends(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)

	res := result(t, f.Call(sid, "prompts/get", map[string]any{"name": "gateway-two-greeting", "arguments": map[string]string{"name": "Bo"}}))
	if !strings.Contains(toJSON(res), "Hello, Bo!") {
		t.Fatalf("prompts/get: %v", res)
	}
	if f.Backends["gateway-two"].Count("prompts/get") != 1 || f.Backends["gateway-one"].Count("prompts/get") != 0 {
		t.Fatal("prompts/get reached the wrong backend")
	}

	res = result(t, f.Call(sid, "resources/read", map[string]any{"uri": "gateway-one-test://counter"}))
	if uri := res["contents"].([]any)[0].(map[string]any)["uri"]; uri != "gateway-one-test://counter" {
		t.Fatalf("read result URI %v: want the prefixed URI the client asked for", uri)
	}

	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-two-test://counter"}))
	if f.Backends["gateway-two"].Count("resources/subscribe") != 1 {
		t.Fatal("subscribe did not reach gateway-two")
	}
	sess, err := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if err != nil || !slices.Contains(sess.Subscriptions, "gateway-two-test://counter") {
		t.Fatalf("subscription not recorded: %v %v", sess, err)
	}
	result(t, f.Call(sid, "resources/unsubscribe", map[string]any{"uri": "gateway-two-test://counter"}))
	sess, _ = f.Store.LoadSession(t.Context(), sid, time.Hour)
	if slices.Contains(sess.Subscriptions, "gateway-two-test://counter") {
		t.Fatal("unsubscribe did not remove the subscription")
	}

	res = result(t, f.Call(sid, "completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": "gateway-one-greeting"},
		"argument": map[string]any{"name": "name", "value": "A"},
	}))
	if !strings.Contains(toJSON(res), "values") {
		t.Fatalf("completion result %v", res)
	}
	if f.Backends["gateway-one"].Count("completion/complete") != 1 {
		t.Fatal("completion did not reach gateway-one")
	}
	result(t, f.Call(sid, "completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/resource", "uri": "gateway-two-test://template/{id}/data"},
		"argument": map[string]any{"name": "id", "value": "1"},
	}))
	if f.Backends["gateway-two"].Count("completion/complete") != 1 {
		t.Fatal("resource completion did not reach gateway-two")
	}
}

func TestRouting_UnroutedReferencesAreInvalidParams(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)
	cases := []struct {
		method string
		params any
		want   string
	}{
		{"tools/call", map[string]any{"name": "nobody-tool"}, "nobody-tool"},
		{"tools/call", map[string]any{}, "name"},
		{"resources/read", map[string]any{"uri": "file:///etc/passwd"}, "file:///etc/passwd"},
		{"resources/subscribe", map[string]any{"uri": "x://y"}, "x://y"},
		{"prompts/get", map[string]any{"name": "greeting"}, "greeting"},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "nope"}}, "nope"},
		{"completion/complete", map[string]any{"ref": map[string]any{"type": "ref/tool", "name": "gateway-one-x"}}, "ref/tool"},
		{"completion/complete", map[string]any{}, "ref"},
		{"tools/list", map[string]any{"cursor": 5}, "tools/list"},
	}
	for _, tc := range cases {
		t.Run(tc.method+"/"+tc.want, func(t *testing.T) {
			e := rpcErr(t, f.Call(sid, tc.method, tc.params))
			if e.Code != router.CodeInvalidParams || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("got %d %q, want -32602 mentioning %q", e.Code, e.Message, tc.want)
			}
		})
	}
	e := rpcErr(t, f.Call(sid, "no/such/method", nil))
	if e.Code != router.CodeMethodNotFound {
		t.Fatalf("unknown method: got %d", e.Code)
	}
}

func TestRouting_BackendErrorsPassThroughUnchanged(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)
	// The backend itself rejects an unknown tool: its error is passed as is.
	direct := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-missing"}))
	if direct.Code == router.CodeInternalError {
		t.Fatalf("backend error was rewritten to -32603: %v", direct)
	}
	if !strings.Contains(direct.Message, "missing") {
		t.Fatalf("backend error message lost: %q", direct.Message)
	}
}

func TestRouting_UnreachableBackendIsInternalErrorNamingIt(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)
	f.Backends["gateway-two"].SetDown(true)
	e := rpcErr(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "x"}}))
	if e.Code != router.CodeInternalError || !strings.Contains(e.Message, "gateway-two") {
		t.Fatalf("got %d %q", e.Code, e.Message)
	}
}

func TestRouting_PingIsLocal(t *testing.T) {
	f := twoBackends(t)
	sid, _ := f.Initialize(nil)
	result(t, f.Call(sid, "ping", nil))
	if f.Backends["gateway-one"].Count("ping") != 0 {
		t.Fatal("ping reached a backend")
	}
}

func TestHeaders_PolicyAppliedOnBackendRequests(t *testing.T) {
	t.Setenv("UNUSED", "")
	f := newFixture(t, backendSpec{Key: "only", Adjust: func(b *router.Backend) {
		b.PassthroughHeaders = []string{"X-Tenant", "X-Both", "X-Gone"}
		b.AddHeaders = map[string]string{"X-Both": "from-config", "Authorization": "Bearer backend-secret", "X-Gone": "added"}
		b.RemoveHeaders = []string{"X-Gone"}
	}})
	hdr := http.Header{}
	hdr.Set("X-Tenant", "acme")
	hdr.Set("X-Both", "from-client")
	hdr.Set("X-Gone", "client")
	hdr.Set("Authorization", "Bearer client-token")
	sid, _ := f.Initialize(hdr)
	result(t, f.CallHdr(sid, hdr, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}))

	got := f.Backends["only"].LastHeaders("tools/call")
	checks := map[string]string{"X-Tenant": "acme", "X-Both": "from-config", "X-Gone": "", "Authorization": "Bearer backend-secret"}
	for k, want := range checks {
		if v := got.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}

func TestInitialize_OneBackendDownIsNotFatalAndIsReprobed(t *testing.T) {
	f := newFixtureOpts(t, router.Options{ReprobeInterval: 1}, // re-probe on every request
		backendSpec{Key: "up"}, backendSpec{Key: "down"})
	f.Backends["down"].SetDown(true)
	sid, res := f.Initialize(nil)
	if _, ok := res["capabilities"].(map[string]any)["tools"]; !ok {
		t.Fatalf("capabilities %v: the healthy backend's tools are missing", res["capabilities"])
	}
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if sess.Backends["down"].OK() || sess.Backends["down"].Error == "" {
		t.Fatalf("snapshot of the failed backend records no failure: %+v", sess.Backends["down"])
	}
	list := result(t, f.Call(sid, "tools/list", nil))
	if meta, _ := list["_meta"].(map[string]any); meta == nil || !strings.Contains(toJSON(meta), "down") {
		t.Fatalf("_meta does not name the skipped backend: %v", list["_meta"])
	}

	f.Backends["down"].SetDown(false)
	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	if !slices.Contains(tools, "down-echo") {
		t.Fatalf("recovered backend not re-probed: %v", tools)
	}
	sess, _ = f.Store.LoadSession(t.Context(), sid, time.Hour)
	if !sess.Backends["down"].OK() {
		t.Fatal("recovered snapshot not persisted")
	}
}

func TestInitialize_MergesCapabilitiesFromEveryBackend(t *testing.T) {
	f := newFixture(t,
		backendSpec{Key: "tools-only", Opts: testsupport.BackendOptions{NoPrompts: true, NoResources: true}},
		backendSpec{Key: "tools-only-too", Opts: testsupport.BackendOptions{NoPrompts: true, NoResources: true}},
	)
	_, res := f.Initialize(nil)
	caps := res["capabilities"].(map[string]any)
	if _, ok := caps["prompts"]; ok {
		t.Fatalf("prompts advertised though no backend has them: %v", caps)
	}
	if _, ok := caps["resources"]; ok {
		t.Fatalf("resources advertised though no backend has them: %v", caps)
	}
	if _, ok := caps["tools"]; !ok {
		t.Fatalf("tools missing: %v", caps)
	}
	info := res["serverInfo"].(map[string]any)
	if info["name"] != "mcpgw" {
		t.Fatalf("serverInfo is not the gateway's own: %v", info)
	}

	g := twoBackends(t)
	_, res = g.Initialize(nil)
	caps = res["capabilities"].(map[string]any)
	if r, _ := caps["resources"].(map[string]any); r["subscribe"] != true {
		t.Fatalf("resources.subscribe lost: %v", caps)
	}
	ins, _ := res["instructions"].(string)
	if !strings.Contains(ins, "gateway-one") || !strings.Contains(ins, "gateway-two") {
		t.Fatalf("instructions not joined under keys: %q", ins)
	}
}

// RouteOf, which the request log uses, names the backend a routed
// identifier goes to, aliases included, and nothing for what is not routed.
func TestRouteOf_NamesTheBackendOfARoutedIdentifier(t *testing.T) {
	f := twoBackends(t)
	cases := []struct{ vhost, method, id, want string }{
		{f.VHost, "tools/call", "gateway-two-echo", "gateway-two"},
		{f.VHost, "tools/call", "Public.Tool", "gateway-one"},
		{f.VHost, "resources/read", "gateway-one-test://x", "gateway-one"},
		{f.VHost, "prompts/get", "gateway-two-greeting", "gateway-two"},
		{f.VHost, "tools/call", "gateway-oneincrement", ""},
		{f.VHost, "tools/list", "", ""},
		{"no-such-vhost", "tools/call", "gateway-two-echo", ""},
	}
	for _, c := range cases {
		if got := f.Router.RouteOf(c.vhost, c.method, c.id); got != c.want {
			t.Errorf("RouteOf(%q, %q, %q) = %q, want %q", c.vhost, c.method, c.id, got, c.want)
		}
	}
}
