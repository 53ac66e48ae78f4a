package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Tool search (a vhost's tool_search) end to end: two gateway processes
// on one Redis behind a round-robin balancer, both protocol generations,
// a 2026-07-28 backend with 200 realistic tools and a 2025-era one. The
// list shows the always tools and the gateway's two; a search finds by
// intent and never what access hides; call_tool is the same call as a
// direct one (access, plugins, rate limits, audit, translation, tasks,
// sign-in); a backend's tool change reaches search on every instance.

// searchBlock is the demo vhost's policy for these tests.
const searchBlock = `    tool_search:
      always: ["gateway-two-get_*"]
      results: 5
    access:
      - allow: ["*"]
        deny: ["gateway-one-*_invoices"]
    plugins:
      - type: deny_pattern
        in: arguments
        patterns: ["(?i)drop\\s+table"]
    rate_limits:
      - per: principal
        tools: ["gateway-two-increment"]
        limit: 2
        window: 1h
`

// searchCluster is gateway-one (2026-07-28, realistic tools, add_tool)
// and gateway-two (2025-era, asking tools) on the demo vhost with
// searchBlock, audited, two instances behind a balancer.
type searchCluster struct {
	*cluster
	gws []*testsupport.GatewayProcess
	lb  *testsupport.RoundRobin
}

func newSearchCluster(t *testing.T) *searchCluster {
	t.Helper()
	c := newClusterOf(t, testsupport.BackendOptions{Stateless: true, ModernTools: true, RealisticTools: 200},
		testsupport.BackendOptions{StreamingTools: true, AskingTools: true})
	c.writeConfig("audit:\n  output: stdout\n" + c.policyConfig(searchBlock))
	s := &searchCluster{cluster: c}
	for range 2 {
		s.gws = append(s.gws, testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL(), "--log-format", "json"},
			[]string{jwtSecretEnv + "=" + string(jwtSecret)}))
	}
	s.lb = testsupport.StartRoundRobin(t, s.gws[0].URL, s.gws[1].URL)
	return s
}

// searchGen sends any request of one generation through the balancer.
type searchGen struct {
	name string
	do   func(method string, params map[string]any) *testsupport.Reply
}

func (s *searchCluster) generations(t *testing.T, sub string) []searchGen {
	lb := testsupport.BaseURL(s.lb.URL)
	legacy := s.client(sub)
	return []searchGen{
		{"2025", func(method string, params map[string]any) *testsupport.Reply {
			if legacy.SessionID == "" {
				legacy.Initialize(lb, nil)
			}
			return legacy.Request(lb, method, params)
		}},
		{"2026-07-28", func(method string, params map[string]any) *testsupport.Reply {
			return modernCall(t, lb, s.token(sub), method, params)
		}},
	}
}

// foundTools are the names a search_tools reply lists, best first; it
// checks the text content says the same as structuredContent.
func foundTools(t *testing.T, r *testsupport.Reply) []string {
	t.Helper()
	res := r.Result()
	sc, ok := res["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("search_tools: no structuredContent: %s", r.Body)
	}
	if structured, _ := json.Marshal(sc); !jsonEqual(json.RawMessage(r.Text()), structured) {
		t.Fatalf("search_tools: text %q is not structuredContent", r.Text())
	}
	var out []string
	for _, it := range sc["tools"].([]any) {
		tool := it.(map[string]any)
		if tool["inputSchema"] == nil || tool["description"] == nil {
			t.Fatalf("search_tools: tool without inputSchema or description: %v", tool)
		}
		out = append(out, tool["name"].(string))
	}
	return out
}

func search(g searchGen, query string, limit int) *testsupport.Reply {
	args := map[string]any{"query": query}
	if limit > 0 {
		args["limit"] = limit
	}
	return g.do("tools/call", map[string]any{"name": "search_tools", "arguments": args})
}

func callTool(g searchGen, tool string, args map[string]any) *testsupport.Reply {
	return g.do("tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": tool, "arguments": args}})
}

func TestToolSearch_BothGenerationsAcrossInstances(t *testing.T) {
	s := newSearchCluster(t)
	one, two := s.backends["gateway-one"], s.backends["gateway-two"]
	run := time.Now().UnixNano() // rate limits live in Redis: principals of this run's own
	for i, name := range []string{"2025", "2026-07-28"} {
		g := s.generations(t, fmt.Sprintf("searcher-%s-%d", name, run))[i] // a principal each: the rate limit
		t.Run(g.name, func(t *testing.T) {
			// The list: the gateway's two tools, then the always glob's.
			if got, want := g.do("tools/list", nil).ToolNames(), []string{"call_tool", "search_tools", "gateway-two-get_stats"}; !slices.Equal(got, want) {
				t.Fatalf("tools/list = %v, want %v", got, want)
			}
			// Found by intent, on both instances (the balancer alternates).
			for range 2 {
				if got := foundTools(t, search(g, "reopen a ticket", 0)); len(got) != 5 || got[0] != "gateway-one-reopen_tickets" {
					t.Fatalf("search found %v, want gateway-one-reopen_tickets first of 5", got)
				}
			}
			if got := foundTools(t, search(g, "add one to the counter", 3)); len(got) != 3 || !strings.HasSuffix(got[0], "-increment") {
				t.Fatalf("search found %v, want an increment first of 3", got)
			}
			// Hidden by the access rule: never found, and call_tool of it
			// answers exactly as a call of an unknown tool.
			for _, q := range []string{"archive invoices", "invoices", "export the invoices"} {
				for _, name := range foundTools(t, search(g, q, 50)) {
					if strings.HasSuffix(name, "_invoices") {
						t.Fatalf("query %q found hidden %s", q, name)
					}
				}
			}
			hidden := callTool(g, "gateway-one-archive_invoices", map[string]any{"query": "x"}).Error()
			unknown := callTool(g, "nowhere-archive_invoices", map[string]any{"query": "x"}).Error()
			direct := g.do("tools/call", map[string]any{"name": "gateway-one-archive_invoices", "arguments": map[string]any{"query": "x"}}).Error()
			if hidden == nil || direct == nil || unknown == nil || hidden.Code != -32602 || hidden.Message != direct.Message ||
				strings.ReplaceAll(unknown.Message, "nowhere-", "gateway-one-") != hidden.Message {
				t.Fatalf("hidden via call_tool %+v, direct %+v, unknown %+v", hidden, direct, unknown)
			}
			// call_tool and the direct call both reach the backend.
			one.ResetCounts()
			if got := callTool(g, "gateway-one-archive_customers", map[string]any{"query": "acme"}).Text(); !strings.HasPrefix(got, "archive_customers") {
				t.Fatalf("call_tool answered %q", got)
			}
			if got := g.do("tools/call", map[string]any{"name": "gateway-one-archive_customers", "arguments": map[string]any{"query": "acme"}}).Text(); !strings.HasPrefix(got, "archive_customers") {
				t.Fatalf("direct call answered %q", got)
			}
			if n := one.Count("tools/call"); n != 2 {
				t.Fatalf("gateway-one saw %d tools/call, want 2", n)
			}
			// A deny rule (a plugin) refuses a call through call_tool, before the backend.
			two.ResetCounts()
			if e := callTool(g, "gateway-two-echo", map[string]any{"text": "x; DROP TABLE users"}).Error(); e == nil || e.Code != -32030 {
				t.Fatalf("deny_pattern through call_tool: %+v", e)
			}
			// The rate limit counts call_tool and direct calls of the tool alike.
			if r := callTool(g, "gateway-two-increment", nil); r.Error() != nil {
				t.Fatalf("first increment: %s", r.Body)
			}
			if r := g.do("tools/call", map[string]any{"name": "gateway-two-increment"}); r.Error() != nil {
				t.Fatalf("second increment: %s", r.Body)
			}
			r := callTool(g, "gateway-two-increment", nil)
			if e := r.Error(); e == nil || e.Code != -32029 || r.Status != http.StatusTooManyRequests {
				t.Fatalf("third increment: %d %s, want 429 -32029", r.Status, r.Body)
			}
			if n := two.Count("tools/call"); n != 2 {
				t.Fatalf("gateway-two saw %d tools/call, want 2 (the deny and the limit stop before it)", n)
			}
		})
	}
	// The audit names the real tool and its backend, for calls through
	// call_tool on either instance; the refusals too. A line is written
	// once its answer is out, so the last request's may come a little
	// after the test has its answer.
	var viaCallTool, denied, limited int
	count := func() bool {
		viaCallTool, denied, limited = 0, 0, 0
		for _, l := range auditLines(t, s.gws...) {
			if l["name"] == "call_tool" {
				t.Fatalf("an audit line names call_tool: %v", l)
			}
			switch {
			case l["name"] == "gateway-one-archive_customers" && l["backend"] == "gateway-one" && l["outcome"] == "ok":
				viaCallTool++
			case l["name"] == "gateway-two-echo" && l["outcome"] == "denied":
				denied++
			case l["name"] == "gateway-two-increment" && l["outcome"] == "rate_limited":
				limited++
			}
		}
		return viaCallTool >= 4 && denied >= 2 && limited >= 2
	}
	testsupport.Eventually(t, 10*time.Second, count)
	if viaCallTool != 4 || denied != 2 || limited != 2 {
		t.Fatalf("audit: %d archive_customers calls, %d denials, %d rate-limited; want 4, 2, 2", viaCallTool, denied, limited)
	}
}

// A backend's tool change reaches search on every instance: a listen on
// one instance hears the backend's tools/list_changed and tells the
// others over the store's bus, which drop what they indexed of it.
func TestToolSearch_BackendToolChangeReachesSearch(t *testing.T) {
	s := newSearchCluster(t)
	cl := &testsupport.Client{T: t, Token: s.token("alice")}
	g := s.generations(t, "alice")[1]
	for _, gw := range s.gws { // each instance indexes the list as it is
		if got := foundTools(t, searchOn(t, cl, gw, "frobnicate the gizmo")); slices.Contains(got, "gateway-one-frobnicate_gizmo") {
			t.Fatalf("found a tool that does not exist yet: %v", got)
		}
	}
	st := cl.ModernStream(s.gws[0], "listen", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if ev := st.Next(); ev.Method() != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen: %v", ev)
	}
	if r := callTool(g, "gateway-one-add_tool", map[string]any{"name": "frobnicate_gizmo"}); r.Error() != nil {
		t.Fatalf("add_tool through call_tool: %s", r.Body)
	}
	if ev := st.Next(); ev.Method() != "notifications/tools/list_changed" {
		t.Fatalf("after add_tool: %v, want tools/list_changed", ev)
	}
	for i, gw := range s.gws {
		if !testsupport.Eventually(t, 10*time.Second, func() bool {
			got := foundTools(t, searchOn(t, cl, gw, "frobnicate the gizmo"))
			return len(got) > 0 && got[0] == "gateway-one-frobnicate_gizmo"
		}) {
			t.Fatalf("instance %d: the new tool is not found", i)
		}
	}
}

// searchOn searches on one instance as a 2026-07-28 client.
func searchOn(t *testing.T, cl *testsupport.Client, gw *testsupport.GatewayProcess, query string) *testsupport.Reply {
	t.Helper()
	return modernCall(t, gw, cl.Token, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": query}})
}

// A 2026-07-28 go-sdk client calls, through call_tool, a 2025-era
// backend's tool that asks its client four times (sampling and
// elicitation): each question becomes an input_required round, each
// retry lands on the other instance, and the backend's one call gets
// every answer.
func TestToolSearch_CallToolTranslatesElicitation(t *testing.T) {
	s := newSearchCluster(t)
	two := s.backends["gateway-two"]
	a := &asks{}
	client := askingClient(a)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpURL(s.lb.URL),
		HTTPClient: &http.Client{Transport: bearer{token: s.token("alice")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	calls := two.Count("tools/call")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool",
		Arguments: map[string]any{"name": "gateway-two-consult", "arguments": map[string]any{"steps": 4}}})
	if err != nil || res.IsError {
		t.Fatalf("consult through call_tool: %v %+v", err, res)
	}
	const want = "consulted: reply to Question 1? | accept true | reply to Question 3? | accept true"
	if got := res.Content[0].(*mcp.TextContent).Text; got != want {
		t.Fatalf("consult answered %q, want %q", got, want)
	}
	if got := len(a.list()); got != 4 {
		t.Fatalf("the client was asked %d times, want 4", got)
	}
	if got := two.Count("tools/call") - calls; got != 1 {
		t.Fatalf("the backend got %d tools/call, want its one call held across the rounds", got)
	}
}

// A tool the gateway runs as a task, called through call_tool: the task
// is created through one instance and completes, polled through the
// other.
func TestToolSearch_CallToolRunsAGatewayTask(t *testing.T) {
	g := newGatewayTasksWith(t, "    tool_search: {}\n")
	a, b := g.gws[0], g.gws[1]
	alice := g.client("alice")
	if got := alice.ModernRequest(a, "tools/list", nil, nil).ToolNames(); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("tools/list = %v", got)
	}
	created := alice.ModernRequest(a, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{
		"name": "fx-slow_compute", "arguments": map[string]any{"seconds": 0.2, "label": "via-search"}}}, tasksCaps).Result()
	token, _ := created["taskId"].(string)
	if created["resultType"] != "task" || !strings.HasPrefix(token, "mt1.") {
		t.Fatalf("created: %v", created)
	}
	done := awaitTask(t, alice, b, token, hasStatus("completed"))
	if !strings.Contains(fmt.Sprint(done["result"]), `slow_compute "via-search" done`) {
		t.Fatalf("completed with %v", done)
	}
}

// call_tool of a user_oauth backend's tool before the user signed in
// there: the same URL elicitation as a direct call (2026-07-28
// input_required, 2025-11-25 -32042), and once signed in the retry goes
// through. A search before the sign-in names the backend with its link,
// as a list does.
func TestToolSearch_CallToolThroughPerUserSignIn(t *testing.T) {
	r := startUserOAuthWith(t, "    tool_search: {}\n")
	alice := &testsupport.Client{T: t, Token: r.aliceToken}
	callWhoami := func(extra map[string]any) map[string]any {
		params := map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "whoami", "arguments": map[string]any{}}}
		for k, v := range extra {
			params[k] = v
		}
		rep := alice.ModernRequest(r.lb, "tools/call", params, urlCaps)
		if rep.Status != http.StatusOK || rep.Error() != nil {
			t.Fatalf("call_tool whoami: %d %s", rep.Status, rep.Body)
		}
		return rep.Result()
	}
	res := callWhoami(nil)
	var ir struct {
		InputRequests map[string]struct {
			Method string
			Params struct{ Mode, URL string }
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	b, _ := json.Marshal(res)
	if err := json.Unmarshal(b, &ir); err != nil || res["resultType"] != "input_required" || ir.RequestState == "" || len(ir.InputRequests) != 1 {
		t.Fatalf("call_tool before sign-in: %s", b)
	}
	link := ir.InputRequests["mcpgw-sign-in"].Params.URL
	if ir.InputRequests["mcpgw-sign-in"].Params.Mode != "url" || link == "" {
		t.Fatalf("call_tool before sign-in asks %s", b)
	}
	found := alice.ModernRequest(r.lb, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "who am i"}}, urlCaps).Result()
	if meta, _ := json.Marshal(found["_meta"]); !strings.Contains(string(meta), `"mcpgw/signInRequired"`) || !strings.Contains(string(meta), `"gh"`) {
		t.Fatalf("search before sign-in: %v", found)
	}
	if st, body := r.open(r.browser("alice", "alice-gh"), link); st != http.StatusOK {
		t.Fatalf("connect: %d %s", st, body)
	}
	res = callWhoami(map[string]any{"requestState": ir.RequestState,
		"inputResponses": map[string]any{"mcpgw-sign-in": map[string]any{"action": "accept"}}})
	if !strings.Contains(resultText(res), "alice-gh") {
		t.Fatalf("the retry after sign-in: %v", res)
	}
	found = alice.ModernRequest(r.lb, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "which third party user am I"}}, urlCaps).Result()
	if got, _ := json.Marshal(found["structuredContent"]); !strings.Contains(string(got), `"name":"whoami"`) {
		t.Fatalf("search after sign-in: %v", found)
	}

	// 2025-11-25: -32042 through call_tool, as for a direct call.
	bob := &testsupport.Client{T: t, Token: r.bobToken}
	bob.Initialize(r.lb, urlCaps)
	rep := bob.Request(r.lb, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "whoami"}})
	var data struct {
		Elicitations []struct{ Mode, URL string }
	}
	if e := rep.Error(); e == nil || e.Code != -32042 || json.Unmarshal(e.Data, &data) != nil || len(data.Elicitations) != 1 {
		t.Fatalf("2025-11-25 call_tool without a token: %d %s", rep.Status, rep.Body)
	}
	if st, body := r.open(r.browser("bob", "bob-gh"), data.Elicitations[0].URL); st != http.StatusOK {
		t.Fatalf("bob connects: %d %s", st, body)
	}
	if txt := bob.Call(r.lb, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "whoami"}}).Text(); !strings.Contains(txt, "bob-gh") {
		t.Fatalf("bob's call_tool after sign-in: %s", txt)
	}
}
