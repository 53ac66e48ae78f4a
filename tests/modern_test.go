package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol 2026-07-28 across instances: go-sdk v1.8 clients with default
// options (they negotiate 2026-07-28) and hand-written modern requests,
// through three gateway processes on one Redis behind a balancer with no
// affinity, in front of two stateless go-sdk backends (which speak
// 2026-07-28 too) on a multi-backend vhost: prefixed names, an alias,
// federated cursors, multi-round-trip requests whose rounds land on
// different instances, signed request states, and subscriptions/listen.

// modernCluster is the "demo" vhost over two stateless backends with the
// modern tools, served by three instances behind a round-robin balancer.
type modernCluster struct {
	*cluster
	gws []*testsupport.GatewayProcess
	lb  *testsupport.RoundRobin
}

// newModernCluster starts it; opts add to the backends' options. The
// vhost also has the alias Greeter for gateway-one's greet.
func newModernCluster(t *testing.T, opts testsupport.BackendOptions) *modernCluster {
	t.Helper()
	opts.Stateless, opts.ModernTools = true, true
	return startModernCluster(t, newClusterWith(t, opts))
}

// startModernCluster starts three instances of c behind a balancer.
func startModernCluster(t *testing.T, c *cluster) *modernCluster {
	t.Helper()
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig(strings.Replace(cfg, "{Public.Tool: get_stats}", "{Public.Tool: get_stats, Greeter: greet}", 1))
	m := &modernCluster{cluster: c}
	var urls []string
	for range 3 {
		g := c.start()
		m.gws = append(m.gws, g)
		urls = append(urls, g.URL)
	}
	m.lb = testsupport.StartRoundRobin(t, urls...)
	return m
}

// connect is a go-sdk client with opts (nil: default options) for sub,
// through the balancer; it is closed when the test ends.
func (m *modernCluster) connect(sub string, client *mcp.Client) *mcp.ClientSession {
	m.t.Helper()
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "modern-e2e", Version: "1"}, nil)
	}
	cs, err := client.Connect(m.t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpURL(m.lb.URL),
		HTTPClient: &http.Client{Transport: bearer{token: m.token(sub)}}}, nil)
	if err != nil {
		m.t.Fatalf("connect: %v", err)
	}
	m.t.Cleanup(func() { cs.Close() })
	return cs
}

// instance names the gateway that served a forwarded request: 0, 1, 2.
func (m *modernCluster) instance(f testsupport.Forwarded) int {
	for i, g := range m.gws {
		if strings.TrimPrefix(g.URL, "http://") == f.Target {
			return i
		}
	}
	m.t.Fatalf("the balancer forwarded to %s, no instance of this cluster", f.Target)
	return -1
}

// forwardedSince lists the requests of method the balancer forwarded
// after the first n requests.
func (m *modernCluster) forwardedSince(n int, method string) []testsupport.Forwarded {
	var out []testsupport.Forwarded
	for _, f := range m.lb.Forwarded()[n:] {
		if f.Method == method {
			out = append(out, f)
		}
	}
	return out
}

// retryParams are the multi-round-trip fields of a forwarded request.
type retryParams struct {
	RequestState   *string         `json:"requestState"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

func retryOf(t *testing.T, f testsupport.Forwarded) retryParams {
	t.Helper()
	var msg struct {
		Params retryParams `json:"params"`
	}
	if err := json.Unmarshal(f.Body, &msg); err != nil {
		t.Fatalf("forwarded body %s: %v", f.Body, err)
	}
	return msg.Params
}

func TestModern_DefaultGoSDKClientsNegotiate20260728WithNoSession(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	for i := range 3 { // the first request (server/discover) on each instance
		cs := m.connect(fmt.Sprintf("client-%d", i), nil)
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("client %d negotiated %q, want 2026-07-28", i, v)
		}
		if cs.ID() != "" {
			t.Fatalf("client %d has session id %q", i, cs.ID())
		}
		if tools, err := cs.ListTools(t.Context(), nil); err != nil || len(tools.Tools) == 0 {
			t.Fatalf("client %d: tools/list: %v %v", i, err, tools)
		}
	}
	served := map[int]bool{}
	for _, f := range m.lb.Forwarded() {
		if f.Method == "initialize" {
			t.Fatalf("a default client sent initialize: %s", f.Body)
		}
		served[m.instance(f)] = true
	}
	if len(served) != 3 {
		t.Fatalf("requests reached instances %v, want all three", served)
	}
	// The instances' request metrics name the revision's methods.
	byMethod := map[string]float64{}
	for _, g := range m.gws {
		fams := testsupport.ScrapeMetrics(t, g.URL)
		for _, rpc := range []string{"server/discover", "tools/list", "other"} {
			byMethod[rpc] += testsupport.MetricSum(fams, "mcpgw_http_requests_total", map[string]string{"rpc_method": rpc})
		}
	}
	if byMethod["server/discover"] != 3 || byMethod["tools/list"] != 3 || byMethod["other"] != 0 {
		t.Fatalf("requests counted by rpc_method %v, want 3 server/discover, 3 tools/list", byMethod)
	}
}

func TestModern_ToolListPagesContinueOnAnyInstance(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{PageSize: 2, ExtraTools: 3})
	cs := m.connect("alice", nil)
	start := len(m.lb.Forwarded())

	var names []string
	cursor, pages := "", 0
	for {
		res, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
		if pages > 20 {
			t.Fatal("the walk does not end")
		}
	}
	// Each backend: increment, get_stats, echo, greet, interview, add_tool,
	// t00..t02; gateway-one's get_stats and greet under their aliases.
	var want []string
	for _, key := range []string{"gateway-one", "gateway-two"} {
		for _, tool := range []string{"increment", "get_stats", "echo", "greet", "interview", "add_tool", "t00", "t01", "t02"} {
			name := key + "-" + tool
			switch {
			case key == "gateway-one" && tool == "get_stats":
				name = "Public.Tool"
			case key == "gateway-one" && tool == "greet":
				name = "Greeter"
			}
			want = append(want, name)
		}
	}
	slices.Sort(want)
	got := slices.Clone(names)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the walk gave %d tools %v\nwant %d %v", len(names), names, len(want), want)
	}
	if pages < 3 {
		t.Fatalf("the walk took %d pages: want several, for pages on several instances", pages)
	}
	lists := m.forwardedSince(start, "tools/list")
	if len(lists) != pages {
		t.Fatalf("%d tools/list requests forwarded for %d pages", len(lists), pages)
	}
	for i := 1; i < len(lists); i++ {
		if m.instance(lists[i]) == m.instance(lists[i-1]) {
			t.Fatalf("pages %d and %d were served by the same instance: the test proves nothing", i, i+1)
		}
	}

	// A cursor is the caller's: another principal's page request with it
	// is refused, on any instance.
	first, err := cs.ListTools(t.Context(), nil)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, first)
	}
	bob := m.client("bob")
	for _, g := range m.gws {
		r := bob.ModernRequest(g, "tools/list", map[string]any{"cursor": first.NextCursor}, nil)
		if e := r.Error(); e == nil || e.Code != -32602 {
			t.Fatalf("bob continuing alice's walk: %d %s", r.Status, r.Body)
		}
	}
}

func TestModern_RoutedCallsAndAliasesOnAMultiBackendVHost(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	cs := m.connect("alice", nil)
	ctx := t.Context()
	one, two := m.backends["gateway-one"], m.backends["gateway-two"]

	type check struct {
		name     string
		call     func() (string, error)
		want     string
		backend  *testsupport.Backend
		method   string
		nameSent string // Mcp-Name the backend got: its own name, not the published one
	}
	text := func(res *mcp.CallToolResult, err error) (string, error) {
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", fmt.Errorf("tool error %+v", res.Content)
		}
		if res.StructuredContent != nil {
			return toJSON(res.StructuredContent), nil
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	checks := []check{
		{name: "tools/call by prefix", call: func() (string, error) {
			return text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-echo", Arguments: map[string]any{"text": "hi two"}}))
		}, want: "hi two", backend: two, method: "tools/call", nameSent: "echo"},
		{name: "tools/call by alias", call: func() (string, error) {
			return text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "Public.Tool"}))
		}, want: `"calls":`, backend: one, method: "tools/call", nameSent: "get_stats"},
		{name: "tools/call by the aliased tool's prefixed name", call: func() (string, error) {
			return text(cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-one-get_stats"}))
		}, want: `"calls":`, backend: one, method: "tools/call", nameSent: "get_stats"},
		{name: "prompts/get", call: func() (string, error) {
			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "gateway-one-greeting", Arguments: map[string]string{"name": "Pat"}})
			if err != nil {
				return "", err
			}
			return res.Messages[0].Content.(*mcp.TextContent).Text, nil
		}, want: "Hello, Pat!", backend: one, method: "prompts/get", nameSent: "greeting"},
		{name: "resources/read of a resource", call: func() (string, error) {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gateway-two-test://counter"})
			if err != nil {
				return "", err
			}
			return res.Contents[0].URI + " " + res.Contents[0].Text, nil
		}, want: "gateway-two-test://counter 0", backend: two, method: "resources/read", nameSent: "test://counter"},
		{name: "resources/read of a template", call: func() (string, error) {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gateway-one-test://template/abc/data"})
			if err != nil {
				return "", err
			}
			return res.Contents[0].URI + " " + res.Contents[0].Text, nil
		}, want: "gateway-one-test://template/abc/data data for abc", backend: one, method: "resources/read", nameSent: "test://template/abc/data"},
		{name: "resources/read keeps the backend's cache hints", call: func() (string, error) {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gateway-one-" + testsupport.CachedURI})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s %d %s", res.Contents[0].Text, res.TTLMs, res.CacheScope), nil
		}, want: "cached 60000 private", backend: one, method: "resources/read", nameSent: testsupport.CachedURI},
		{name: "completion/complete", call: func() (string, error) {
			res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "gateway-two-greeting"},
				Argument: mcp.CompleteParamsArgument{Name: "name", Value: "al"}})
			if err != nil {
				return "", err
			}
			return strings.Join(res.Completion.Values, ","), nil
		}, want: "Alice,Alicia", backend: two, method: "completion/complete"},
	}
	last := -1
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			n := len(m.lb.Forwarded())
			before := tc.backend.Count(tc.method)
			got, err := tc.call()
			if err != nil || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if tc.backend.Count(tc.method) != before+1 {
				t.Fatalf("the backend got %d %s, want 1", tc.backend.Count(tc.method)-before, tc.method)
			}
			h := tc.backend.LastHeaders(tc.method)
			if h.Get("Mcp-Protocol-Version") != "2026-07-28" || h.Get("Mcp-Method") != tc.method || h.Get("Mcp-Session-Id") != "" {
				t.Fatalf("backend request headers %v: want a sessionless 2026-07-28 request", h)
			}
			if tc.nameSent != "" && h.Get("Mcp-Name") != tc.nameSent {
				t.Fatalf("backend got Mcp-Name %q, want %q", h.Get("Mcp-Name"), tc.nameSent)
			}
			fs := m.forwardedSince(n, tc.method)
			if len(fs) != 1 {
				t.Fatalf("%d %s requests forwarded, want 1", len(fs), tc.method)
			}
			if i := m.instance(fs[0]); i == last {
				t.Fatalf("two calls in a row on instance %d", i)
			} else {
				last = i
			}
		})
	}
}

// answers is a go-sdk client's elicitation handler: it answers each
// question it knows with one field, and records the questions.
type answers struct {
	mu    sync.Mutex
	asked []string
}

var knownAnswers = map[string]map[string]any{
	"What is your name?":                     {"name": "Ada"},
	"Step 1: what is your name?":             {"name": "Ada"},
	"Step 2: what is your favourite colour?": {"color": "teal"},
	"Which topic?":                           {"topic": "gateways"},
	"The passphrase?":                        {"passphrase": "sesame"},
	"Proceed?":                               {"ok": true},
}

func (a *answers) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params.Message)
	a.mu.Unlock()
	content, ok := knownAnswers[req.Params.Message]
	if !ok {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

func (a *answers) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// A go-sdk client fulfils input_required results with its elicitation
// handler and retries; the balancer sends each round to the next
// instance, which must take the other instance's signed request state.
func TestModern_MultiRoundTripRoundsSplitAcrossInstances(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	a := &answers{}
	cs := m.connect("alice", mcp.NewClient(&mcp.Implementation{Name: "mrtr-e2e", Version: "1"},
		&mcp.ClientOptions{ElicitationHandler: a.elicit}))
	ctx := t.Context()
	one, two := m.backends["gateway-one"], m.backends["gateway-two"]

	toolText := func(name string) func() (string, error) {
		return func() (string, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
			if err != nil {
				return "", err
			}
			if res.IsError || len(res.Content) == 0 {
				return "", fmt.Errorf("result %+v", res)
			}
			return res.Content[0].(*mcp.TextContent).Text, nil
		}
	}
	cases := []struct {
		name      string
		method    string
		call      func() (string, error)
		want      string
		backend   *testsupport.Backend
		round     string // what the backend counts rounds of
		questions []string
	}{
		{name: "a tool by prefix", method: "tools/call", call: toolText("gateway-one-greet"), want: "Hello, Ada!",
			backend: one, round: "greet", questions: []string{"What is your name?"}},
		{name: "a tool by alias", method: "tools/call", call: toolText("Greeter"), want: "Hello, Ada!",
			backend: one, round: "greet", questions: []string{"What is your name?"}},
		{name: "two rounds with an evolving state", method: "tools/call", call: toolText("gateway-two-interview"), want: "Ada likes teal",
			backend: two, round: "interview", questions: []string{"Step 1: what is your name?", "Step 2: what is your favourite colour?"}},
		{name: "a prompt", method: "prompts/get", call: func() (string, error) {
			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "gateway-two-topic"})
			if err != nil {
				return "", err
			}
			return res.Messages[0].Content.(*mcp.TextContent).Text, nil
		}, want: "Tell me about gateways.", backend: two, round: "topic", questions: []string{"Which topic?"}},
		{name: "a resource", method: "resources/read", call: func() (string, error) {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gateway-one-" + testsupport.VaultURI})
			if err != nil {
				return "", err
			}
			return res.Contents[0].URI + " " + res.Contents[0].Text, nil
		}, want: "gateway-one-test://vault opened with sesame", backend: one, round: testsupport.VaultURI, questions: []string{"The passphrase?"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, asked := len(m.lb.Forwarded()), len(a.questions())
			rounds := tc.backend.Rounds(tc.round)
			got, err := tc.call()
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if q := a.questions()[asked:]; !slices.Equal(q, tc.questions) {
				t.Fatalf("the client was asked %q, want %q", q, tc.questions)
			}
			want := len(tc.questions) + 1
			if got := tc.backend.Rounds(tc.round) - rounds; got != want {
				t.Fatalf("the backend served %d rounds, want %d", got, want)
			}
			fs := m.forwardedSince(n, tc.method)
			if len(fs) != want {
				t.Fatalf("%d %s requests forwarded, want %d", len(fs), tc.method, want)
			}
			var states []string
			for i, f := range fs {
				p := retryOf(t, f)
				if i == 0 {
					if p.RequestState != nil || p.InputResponses != nil {
						t.Fatalf("the first round carried retry fields: %s", f.Body)
					}
					continue
				}
				if p.RequestState == nil || *p.RequestState == "" || len(p.InputResponses) == 0 {
					t.Fatalf("round %d carried no request state or input responses: %s", i+1, f.Body)
				}
				if strings.Contains(*p.RequestState, "round=") {
					t.Fatalf("the client was handed the backend's own state: %q", *p.RequestState)
				}
				if slices.Contains(states, *p.RequestState) {
					t.Fatalf("round %d echoed an earlier round's state", i+1)
				}
				states = append(states, *p.RequestState)
				if m.instance(f) == m.instance(fs[i-1]) {
					t.Fatalf("rounds %d and %d on the same instance: the test proves nothing", i, i+1)
				}
			}
		})
	}
}

// A request state is the gateway's signed envelope: altered, replayed by
// another caller, or moved to another request, it is refused (-32602) on
// any instance before any backend sees it; the untouched one still
// completes the call afterwards.
func TestModern_RequestStateRefusedUnlessItsOwnersUntouchedRetry(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	one, two := m.backends["gateway-one"], m.backends["gateway-two"]
	alice, bob := m.client("alice"), m.client("bob")
	caps := map[string]any{"elicitation": map[string]any{}}

	first := alice.ModernRequest(m.gws[0], "tools/call", map[string]any{"name": "gateway-one-greet"}, caps)
	res := first.Result()
	ir, _ := res["inputRequests"].(map[string]any)
	userName, _ := ir["user_name"].(map[string]any)
	state, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || userName["method"] != "elicitation/create" || state == "" {
		t.Fatalf("first round: %s", first.Body)
	}
	answer := map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}

	// An interview in its second round, for a backend state to forge.
	interview := alice.ModernRequest(m.gws[1], "tools/call", map[string]any{"name": "gateway-one-interview"}, caps).Result()
	if interview["resultType"] != "input_required" {
		t.Fatalf("interview: %v", interview)
	}

	payload, sig, _ := strings.Cut(state, ".")
	flipped := []byte(payload)
	flipped[len(flipped)/2] ^= 1
	cases := []struct {
		name   string
		client *testsupport.Client
		method string
		params map[string]any
	}{
		{"a tampered signature", alice, "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": state + "-TAMPERED"}},
		{"a tampered payload", alice, "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": string(flipped) + "." + sig}},
		{"no signature", alice, "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": payload}},
		{"the backend's own state form", alice, "tools/call", map[string]any{"name": "gateway-one-interview", "requestState": "round=2;name=Eve",
			"inputResponses": map[string]any{"step2": map[string]any{"action": "accept", "content": map[string]any{"color": "red"}}}}},
		{"another caller", bob, "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": state}},
		{"another tool of the backend", alice, "tools/call", map[string]any{"name": "gateway-one-interview", "requestState": state}},
		{"the same tool on another backend", alice, "tools/call", map[string]any{"name": "gateway-two-greet", "requestState": state}},
		{"the tool by its alias", alice, "tools/call", map[string]any{"name": "Greeter", "requestState": state}},
		{"another method", alice, "prompts/get", map[string]any{"name": "gateway-one-greeting", "arguments": map[string]any{"name": "x"}, "requestState": state}},
	}
	calls := func() []int {
		return []int{one.Count("tools/call"), two.Count("tools/call"), one.Count("prompts/get"), two.Count("prompts/get")}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := cloneParams(tc.params)
			if _, ok := params["inputResponses"]; !ok {
				params["inputResponses"] = answer
			}
			before := calls()
			cl := &testsupport.Client{T: t, Token: tc.client.Token}
			r := cl.ModernRequest(m.gws[i%3], tc.method, params, caps)
			// The status is the gateway's choice (the revision fixes 400 only
			// for malformed _meta); the JSON-RPC error is the refusal.
			if e := r.Error(); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "requestState") {
				t.Fatalf("retry answered %d %s, want -32602 about the requestState", r.Status, r.Body)
			}
			if after := calls(); !slices.Equal(before, after) {
				t.Fatalf("a backend was called: %v -> %v", before, after)
			}
		})
	}
	if one.Rounds("greet") != 1 || one.Rounds("interview") != 1 || two.Rounds("greet") != 0 {
		t.Fatalf("rounds greet %d interview %d, other backend's greet %d: want 1, 1, 0",
			one.Rounds("greet"), one.Rounds("interview"), two.Rounds("greet"))
	}

	// The owner's untouched retry, on yet another instance, completes.
	r := alice.ModernRequest(m.gws[2], "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": state, "inputResponses": answer}, caps)
	if got := r.Text(); got != "Hello, Ada!" || r.Result()["resultType"] != "complete" {
		t.Fatalf("the owner's retry: %s", r.Body)
	}
}

func cloneParams(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// listenNote decodes a notification of a listen stream.
type listenNote struct {
	Method string `json:"method"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		URI           string                     `json:"uri"`
		Notifications struct {
			ToolsListChanged      bool     `json:"toolsListChanged"`
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	} `json:"params"`
}

func decodeNote(t *testing.T, ev testsupport.SSEEvent) listenNote {
	t.Helper()
	var n listenNote
	if err := json.Unmarshal([]byte(ev.Data), &n); err != nil {
		t.Fatalf("event %s: %v", ev.Data, err)
	}
	return n
}

// A hand-written subscriptions/listen on one instance: the acknowledgement
// comes first, then the changes that requests on other instances cause in
// the backends, each tagged with the listen's id (its JSON type kept), a
// resource's URI with its backend prefix.
func TestModern_ListenHearsChangesCausedThroughOtherInstances(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	for _, id := range []any{"listen-1", 7} {
		t.Run(fmt.Sprintf("id %v", id), func(t *testing.T) {
			cl := &testsupport.Client{T: t, Token: m.token("alice")}
			subID, _ := json.Marshal(id)
			s := cl.ModernStream(m.gws[0], id, "subscriptions/listen", map[string]any{"notifications": map[string]any{
				"toolsListChanged": true, "resourceSubscriptions": []string{"gateway-one-test://counter"}}}, nil)

			ack := decodeNote(t, s.Next())
			if ack.Method != "notifications/subscriptions/acknowledged" || string(ack.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != string(subID) {
				t.Fatalf("first event %+v, want the acknowledgement tagged %s", ack, subID)
			}
			if !ack.Params.Notifications.ToolsListChanged || !slices.Equal(ack.Params.Notifications.ResourceSubscriptions, []string{"gateway-one-test://counter"}) {
				t.Fatalf("acknowledged %+v, want tools list changes and the prefixed counter", ack.Params.Notifications)
			}

			cl.ModernRequest(m.gws[1], "tools/call", map[string]any{"name": "gateway-one-increment"}, nil).Result()
			up := decodeNote(t, s.Next())
			if up.Method != "notifications/resources/updated" || up.Params.URI != "gateway-one-test://counter" ||
				string(up.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != string(subID) {
				t.Fatalf("after an increment: %+v, want the prefixed counter's update tagged %s", up, subID)
			}

			name := fmt.Sprintf("fresh%d", len(subID))
			cl.ModernRequest(m.gws[2], "tools/call", map[string]any{"name": "gateway-two-add_tool", "arguments": map[string]any{"name": name}}, nil).Result()
			lc := decodeNote(t, s.Next())
			if lc.Method != "notifications/tools/list_changed" || string(lc.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != string(subID) {
				t.Fatalf("after a tool was added: %+v, want tools/list_changed tagged %s", lc, subID)
			}
			if tools := cl.ModernRequest(m.gws[1], "tools/list", nil, nil).ToolNames(); !slices.Contains(tools, "gateway-two-"+name) {
				t.Fatalf("tools/list after the change: %v", tools)
			}
		})
	}
}

// A go-sdk client with a tool-list handler listens by itself after its
// discover (the gateway advertises listChanged); Subscribe opens a listen
// for one resource. Both hear changes caused on other instances; closing
// the client ends the backends' listens too.
func TestModern_GoSDKClientListensThroughTheGateway(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	acks := make(chan struct{}, 4)
	toolsChanged := make(chan *mcp.ToolListChangedParams, 4)
	updated := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "listen-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) { toolsChanged <- req.Params },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acks <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(15 * time.Second):
			t.Fatalf("no %s within 15s", what)
		}
	}
	cs := m.connect("alice", client)
	wait("acknowledgement of the client's own listen", acks)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: "gateway-one-test://counter"}); err != nil {
		t.Fatal(err)
	}
	wait("acknowledgement of the resource's listen", acks)

	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "gateway-two-add_tool", Arguments: map[string]any{"name": "newcomer"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-toolsChanged:
		if _, ok := p.Meta["io.modelcontextprotocol/subscriptionId"]; !ok {
			t.Fatalf("tools/list_changed without a subscription id: %+v", p)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the tool-list handler was not called")
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "gateway-one-increment"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "gateway-one-test://counter" {
			t.Fatalf("resources/updated for %q", uri)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the resource-updated handler was not called")
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "gateway-two-newcomer" }) {
		t.Fatalf("tools/list after the change: %v %v", err, tools)
	}

	// The listens hold stateless backend sessions open; closing the client
	// ends them, through whichever instances serve them.
	cs.Close()
	for name, b := range m.backends {
		if !testsupport.Eventually(t, 15*time.Second, func() bool {
			n := 0
			for range b.Server.Sessions() {
				n++
			}
			return n == 0
		}) {
			t.Fatalf("backend %s still serves listens after the client closed", name)
		}
	}
}

// An instance that stops gracefully ends its listens with the listen's
// result (the client then listens elsewhere), rather than cutting them.
func TestModern_ListenEndsWithItsResultWhenItsInstanceStops(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	cl := m.client("alice")
	s := cl.ModernStream(m.gws[0], "bye", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if ack := decodeNote(t, s.Next()); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first event %+v", ack)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- m.gws[0].Stop() }()
	var end struct {
		ID     string `json:"id"`
		Result struct {
			ResultType string                     `json:"resultType"`
			Meta       map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	ev := s.Next()
	if err := json.Unmarshal([]byte(ev.Data), &end); err != nil || end.ID != "bye" || end.Result.ResultType != "complete" ||
		string(end.Result.Meta["io.modelcontextprotocol/subscriptionId"]) != `"bye"` {
		t.Fatalf("last event %s, want the listen's result", ev.Data)
	}
	s.ExpectEnd(15 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	// The client listens again through the balancer: another instance.
	m.lb.SetTargets(m.gws[1].URL, m.gws[2].URL)
	s2 := cl.ModernStream(testsupport.BaseURL(m.lb.URL), "again", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if ack := decodeNote(t, s2.Next()); ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen elsewhere: %+v", ack)
	}
}

// A backend that cannot be reached when a client starts listening joins
// the listen once it is back: a listen lasts for hours, and a backend
// restarting at the wrong moment must not leave its changes unheard for
// all that time (the acknowledgement, which another backend's part
// already makes say toolsListChanged, could not tell the client).
func TestModern_ListenTakesInABackendThatWasDownWhenItBegan(t *testing.T) {
	m := newModernCluster(t, testsupport.BackendOptions{})
	two := m.backends["gateway-two"]
	two.SetDown(true)
	cl := m.client("alice")
	s := cl.ModernStream(m.gws[0], "late", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
	if ack := decodeNote(t, s.Next()); ack.Method != "notifications/subscriptions/acknowledged" || !ack.Params.Notifications.ToolsListChanged {
		t.Fatalf("first event %+v, want an acknowledgement of gateway-one's part", ack)
	}
	two.SetDown(false)
	if !two.WaitCount(testsupport.ListenAcknowledged, 1, 30*time.Second) {
		t.Fatal("the listen never reached gateway-two once it was back")
	}
	cl.ModernRequest(m.gws[1], "tools/call", map[string]any{"name": "gateway-two-add_tool", "arguments": map[string]any{"name": "back"}}, nil).Result()
	if lc := decodeNote(t, s.Next()); lc.Method != "notifications/tools/list_changed" || string(lc.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != `"late"` {
		t.Fatalf("after gateway-two's tool list changed: %+v", lc)
	}
}

// One vhost, both generations of backend: gateway-one speaks 2026-07-28
// (stateless), gateway-two only the session protocol (stateful). A default
// go-sdk client sees one 2026-07-28 server: lists, calls and multi-round
// trips reach either backend in its own protocol (the session backend's
// mid-call elicitation becomes input_required, its retry on another
// instance), and its listens hear the session backend's changes too
// (through that backend's GET stream).
func TestModern_MixedGenerationsOnOneVHost(t *testing.T) {
	c := newClusterOf(t, testsupport.BackendOptions{Stateless: true, ModernTools: true}, testsupport.BackendOptions{ModernTools: true, StreamingTools: true})
	m := startModernCluster(t, c)
	one, two := m.backends["gateway-one"], m.backends["gateway-two"]
	acks := make(chan struct{}, 4)
	toolsChanged := make(chan struct{}, 4)
	updated := make(chan string, 4)
	a := &answers{}
	client := mcp.NewClient(&mcp.Implementation{Name: "mixed-e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler:     a.elicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acks <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(15 * time.Second):
			t.Fatalf("no %s within 15s", what)
		}
	}
	cs := m.connect("alice", client)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q", v)
	}
	wait("acknowledgement of the client's listen", acks)
	ctx := t.Context()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "Greeter" }) ||
		!slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "gateway-two-echo" }) {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-echo", Arguments: map[string]any{"text": "old"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "old" {
		t.Fatalf("a call to the session backend: %v %+v", err, res)
	}
	if v := two.LastHeaders("tools/call").Get("Mcp-Protocol-Version"); v == "2026-07-28" || v == "" {
		t.Fatalf("the session backend was spoken to in version %q", v)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-one-greet"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Hello, Ada!" || one.Rounds("greet") != 2 {
		t.Fatalf("a multi-round trip to the 2026-07-28 backend: %v %+v (rounds %d)", err, res, one.Rounds("greet"))
	}

	// The session backend asks the client mid-call (elicitation/create):
	// the call parks, the client gets input_required, and its retry, on
	// another instance, resumes the parked call.
	n := len(m.lb.Forwarded())
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-confirm", Arguments: map[string]any{"question": "Proceed?"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "user chose accept") {
		t.Fatalf("a session backend's elicitation: %v %+v", err, res)
	}
	if fs := m.forwardedSince(n, "tools/call"); len(fs) != 2 || m.instance(fs[0]) == m.instance(fs[1]) {
		t.Fatalf("the elicitation's rounds: %d requests, want 2 on different instances", len(fs))
	}
	if q := a.questions(); !slices.Contains(q, "Proceed?") {
		t.Fatalf("the client was asked %q", q)
	}

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-add_tool", Arguments: map[string]any{"name": "mixed"}}); err != nil {
		t.Fatal(err)
	}
	wait("tools/list_changed from the session backend", toolsChanged)
	if tools, err := cs.ListTools(ctx, nil); err != nil || !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "gateway-two-mixed" }) {
		t.Fatalf("tools/list after the change: %v %v", err, tools)
	}

	gets := two.Count("GET")
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "gateway-two-test://counter"}); err != nil {
		t.Fatal(err)
	}
	wait("acknowledgement of the resource's listen", acks)
	if !two.WaitCount("GET", gets+1, 15*time.Second) {
		t.Fatal("no stream opened on the session backend for the resource's listen")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-two-increment"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "gateway-two-test://counter" {
			t.Fatalf("resources/updated for %q", uri)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the session backend's resource update was not heard")
	}
}
