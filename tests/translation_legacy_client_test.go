package tests

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/modernonly"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2025-era client (a session) on a backend that speaks only 2026-07-28
// (package modernonly: it refuses initialize, GET and every request that
// is not a 2026-07-28 one), across instances: the gateway turns the
// backend's input_required into real requests on the call's stream, whose
// answers land on any instance; answers ping and logging/setLevel itself,
// carrying the level in each request's _meta; and feeds the session's GET
// stream from the backend's subscriptions/listen, on whichever instance
// holds the stream.

// newModernOnlyCluster is three instances over one modern-only backend,
// the "demo" vhost's only one (so its names are not prefixed).
func newModernOnlyCluster(t *testing.T) (*modernCluster, *testsupport.ModernOnlyBackend) {
	t.Helper()
	be := testsupport.StartModernOnly(t)
	c := &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	c.config = t.TempDir() + "/gateway.yaml"
	c.writeConfig(fmt.Sprintf(`%s  demo:
    backends:
      everything:
        url: %s
`, configHead(), be.URL))
	return startModernCluster(t, c), be
}

// legacyAnswers answers a 2025 client's sampling ("reply to <prompt>")
// and elicitation (by question) requests.
func legacyAnswers(a *asks) *mcp.ClientOptions {
	byQuestion := map[string]map[string]any{
		"What is your name?":                   {"name": "Ada"},
		"Step 1: What is your name?":           {"name": "Ada"},
		"Step 2: What is your favorite color?": {"color": "teal"},
		"Who are you?":                         {"username": "ada", "email": "ada@example.com"},
	}
	return &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			a.add("sampling: " + prompt)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "reply to " + prompt}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.add("elicitation: " + req.Params.Message)
			content, ok := byQuestion[req.Params.Message]
			if !ok {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
	}
}

// A go-sdk client speaking 2025-11-25 calls the modern-only backend's
// asking tools: it gets real sampling and elicitation requests on the
// call's stream (one round, two rounds, three requests at once), its
// answers reach other instances than the call's, and the backend, asked
// again with inputResponses and its requestState, completes.
func TestTranslation_LegacyClientGetsRealRequestsForInputRequired(t *testing.T) {
	m, be := newModernOnlyCluster(t)
	a := &asks{}
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy-e2e", Version: "1"}, legacyAnswers(a))
	client.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpURL(m.lb.URL),
		HTTPClient: &http.Client{Transport: bearer{token: m.token("alice")}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if cs.ID() == "" || cs.InitializeResult().ProtocolVersion != "2025-11-25" {
		t.Fatalf("session %q, version %q: want a 2025-11-25 session", cs.ID(), cs.InitializeResult().ProtocolVersion)
	}
	cases := []struct {
		tool   string
		args   map[string]any
		want   string
		asked  []string
		rounds int // backend calls of the tool
	}{
		{"test_sampling", map[string]any{"prompt": "6x7?"}, "LLM response: reply to 6x7?", []string{"sampling: 6x7?"}, 2},
		{"test_elicitation", map[string]any{"message": "Who are you?"}, "Elicitation result: action=accept, content=map[email:ada@example.com username:ada]",
			[]string{"elicitation: Who are you?"}, 2},
		{"test_input_required_result_multi_round", nil, "Multi-round complete: Ada likes teal",
			[]string{"elicitation: Step 1: What is your name?", "elicitation: Step 2: What is your favorite color?"}, 3},
		{"test_input_required_result_multiple_inputs", nil, "reply to Generate a greeting Ada — 1 root(s) visible",
			[]string{"elicitation: What is your name?", "sampling: Generate a greeting"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			n, asked, calls := len(m.lb.Forwarded()), len(a.list()), be.Count("tools/call "+tc.tool)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", tc.tool, err, res)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
				t.Fatalf("%s answered %q, want %q", tc.tool, got, tc.want)
			}
			got := a.list()[asked:]
			slices.Sort(got) // the requests of one round come concurrently
			if !slices.Equal(got, tc.asked) {
				t.Fatalf("the client was asked %q, want %q", got, tc.asked)
			}
			if got := be.Count("tools/call "+tc.tool) - calls; got != tc.rounds {
				t.Fatalf("the backend served %d rounds, want %d", got, tc.rounds)
			}
			if v := be.LastMeta("tools/call " + tc.tool)["io.modelcontextprotocol/protocolVersion"]; v != modernonly.ProtocolVersion {
				t.Fatalf("the backend was sent _meta version %v", v)
			}
			// Each answer is a POST of its own: none may need the call's
			// instance.
			fs := m.lb.Forwarded()[n:]
			call := slices.IndexFunc(fs, func(f testsupport.Forwarded) bool { return f.Method == "tools/call" })
			elsewhere := 0
			for _, f := range fs {
				if f.Method == "" && strings.Contains(string(f.Body), `"result"`) && m.instance(f) != m.instance(fs[call]) {
					elsewhere++
				}
			}
			if elsewhere == 0 {
				t.Fatal("no answer reached another instance than the call's: the test proves nothing")
			}
		})
	}
	if be.Count("initialize") != 0 || be.Count("GET") != 0 {
		t.Fatalf("the modern-only backend was sent %d initialize and %d GET", be.Count("initialize"), be.Count("GET"))
	}
}

// ping and logging/setLevel are the gateway's to answer (the backend has
// neither); the level set on one instance reaches the backend in the
// _meta of a call on another, and the backend's log messages are
// filtered by it.
func TestTranslation_LegacyClientLogLevelAndPingAnsweredByTheGateway(t *testing.T) {
	m, be := newModernOnlyCluster(t)
	cl := m.client("alice")
	cl.Initialize(m.gws[0], nil)
	if r := cl.Call(m.gws[1], "ping", nil); len(r.Final().Result) == 0 {
		t.Fatalf("ping: %s", r.Body)
	}
	for i, tc := range []struct {
		level string
		logs  int
	}{{"warning", 0}, {"info", 3}, {"error", 0}} {
		t.Run(tc.level, func(t *testing.T) {
			cl.Call(m.gws[i%3], "logging/setLevel", map[string]any{"level": tc.level})
			r := cl.Call(m.gws[(i+1)%3], "tools/call", map[string]any{"name": "test_tool_with_logging"})
			logs := 0
			for _, msg := range r.Messages {
				if msg.Method == "notifications/message" {
					logs++
				}
			}
			if logs != tc.logs || !strings.Contains(r.Text(), "executed successfully") {
				t.Fatalf("at level %s the call carried %d log messages (want %d): %s", tc.level, logs, tc.logs, r.Body)
			}
			if got := be.LastMeta("tools/call test_tool_with_logging")["io.modelcontextprotocol/logLevel"]; got != tc.level {
				t.Fatalf("the backend's _meta logLevel %v, want %s", got, tc.level)
			}
		})
	}
	if be.Count("ping") != 0 || be.Count("logging/setLevel") != 0 || be.Count("initialize") != 0 {
		t.Fatalf("the backend got %d ping, %d logging/setLevel, %d initialize", be.Count("ping"), be.Count("logging/setLevel"), be.Count("initialize"))
	}
}

// A session's call of a tool whose argument the backend wants mirrored in
// a header (SEP-2243) carries the header: the client, speaking the session
// protocol, sends none; the gateway makes it from the argument, on
// whichever instance serves the call (the backend refuses a call without).
func TestTranslation_LegacyClientCallCarriesTheParamHeaders(t *testing.T) {
	m, _ := newModernOnlyCluster(t)
	cl := m.client("alice")
	cl.Initialize(m.gws[0], nil)
	for i, region := range []string{"eu-west-1", "zürich"} {
		r := cl.Call(m.gws[(i+1)%3], "tools/call", map[string]any{"name": "test_x_mcp_header", "arguments": map[string]any{"region": region, "level": 2}})
		if got := r.Text(); got != "region="+region {
			t.Fatalf("test_x_mcp_header(%q) answered %s", region, r.Body)
		}
	}
}

// A session's subscription, made on one instance, is heard on its GET
// stream held by another, through the backend's subscriptions/listen; so
// are list changes; and when the client resumes its stream on a third
// instance, that instance's listen takes over.
func TestTranslation_LegacyClientSubscriptionsFromTheBackendsListen(t *testing.T) {
	m, be := newModernOnlyCluster(t)
	cl := m.client("alice")
	cl.Initialize(m.gws[0], nil)
	cl.Call(m.gws[1], "resources/subscribe", map[string]any{"uri": modernonly.WatchedURI})
	if be.Count("resources/subscribe") != 0 {
		t.Fatal("resources/subscribe was forwarded to a backend that has none")
	}
	acks := be.Count(testsupport.ListenAcknowledged)
	st := cl.Stream(m.gws[2], "")
	st.NextRaw() // priming
	if !be.WaitCount(testsupport.ListenAcknowledged, acks+1, 15*time.Second) {
		t.Fatal("the stream's instance did not listen to the backend")
	}
	be.Server.TouchWatched(t.Context())
	up := st.Next()
	if up.Method() != "notifications/resources/updated" || !strings.Contains(up.Data, modernonly.WatchedURI) ||
		strings.Contains(up.Data, "subscriptionId") {
		t.Fatalf("after the resource changed: %s, want resources/updated without a listen's tag", up.Data)
	}
	cl.Call(m.gws[0], "tools/call", map[string]any{"name": "test_trigger_tool_change"})
	if lc := st.Next(); lc.Method() != "notifications/tools/list_changed" {
		t.Fatalf("after the tool list changed: %s", lc.Data)
	}

	// The client resumes its stream on another instance.
	st.Close()
	last := up.ID
	resumed := cl.Stream(m.gws[0], last)
	if !be.WaitCount(testsupport.ListenAcknowledged, acks+2, 15*time.Second) {
		t.Fatal("the new holder did not listen to the backend")
	}
	// Events of the old holder may be replayed (the list change): the
	// next update is what proves the new holder's listen.
	be.Server.TouchWatched(t.Context())
	deadline := time.Now().Add(15 * time.Second)
	for {
		ev, ok := resumed.NextWithin(time.Until(deadline))
		if !ok {
			t.Fatal("no resource update on the resumed stream")
		}
		if ev.Method() == "notifications/resources/updated" {
			break
		}
		if ev.Method() != "notifications/tools/list_changed" {
			t.Fatalf("resumed stream: %s", ev.Data)
		}
	}
	if be.Count("GET") != 0 || be.Count("initialize") != 0 {
		t.Fatalf("the modern-only backend was sent %d GET, %d initialize", be.Count("GET"), be.Count("initialize"))
	}
}

// One vhost, both generations of backend (gateway-one speaks 2026-07-28,
// gateway-two only the session protocol), both generations of client:
// each walks the merged tool list page by page, every page on another
// instance, and both see the same list; each calls a tool of each backend.
func TestTranslation_MixedVHostServesBothClientsTheSameMergedPages(t *testing.T) {
	c := newClusterOf(t, testsupport.BackendOptions{Stateless: true, ModernTools: true, PageSize: 2, ExtraTools: 2},
		testsupport.BackendOptions{StreamingTools: true, PageSize: 2, ExtraTools: 2})
	m := startModernCluster(t, c)
	legacy, modern := m.client("alice"), m.client("alice")
	legacy.Initialize(m.gws[0], nil)

	walk := func(name string, list func(i int, params map[string]any) *testsupport.Reply) []string {
		t.Helper()
		var names []string
		cursor := ""
		for page := 0; ; page++ {
			if page > 30 {
				t.Fatalf("%s: the walk does not end", name)
			}
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			res := list(page, params).Result()
			for _, tl := range res["tools"].([]any) {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			if cursor, _ = res["nextCursor"].(string); cursor == "" {
				if page < 2 {
					t.Fatalf("%s: %d pages, want several", name, page+1)
				}
				return names
			}
		}
	}
	fromLegacy := walk("2025 session", func(i int, p map[string]any) *testsupport.Reply {
		return legacy.Call(m.gws[(i+1)%3], "tools/list", p)
	})
	fromModern := walk("2026-07-28", func(i int, p map[string]any) *testsupport.Reply {
		return modern.ModernRequest(m.gws[i%3], "tools/list", p, nil)
	})
	for _, names := range [][]string{fromLegacy, fromModern} {
		sorted := slices.Clone(names)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(names) {
			t.Fatalf("the walk repeated names: %v", names)
		}
		for _, want := range []string{"gateway-one-t00", "gateway-one-t01", "gateway-two-t00", "gateway-two-t01", "Greeter", "Public.Tool", "gateway-two-sample"} {
			if !slices.Contains(names, want) {
				t.Fatalf("the walk has no %s: %v", want, names)
			}
		}
	}
	a, b := slices.Clone(fromLegacy), slices.Clone(fromModern)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("the clients saw different lists:\n2025: %v\n2026: %v", a, b)
	}
	for i, tool := range []string{"gateway-one-echo", "gateway-two-echo"} {
		args := map[string]any{"name": tool, "arguments": map[string]any{"text": "hi " + tool}}
		if got := legacy.Call(m.gws[i%3], "tools/call", args).Text(); got != "hi "+tool {
			t.Fatalf("2025 session calling %s: %q", tool, got)
		}
		if got := modern.ModernRequest(m.gws[(i+1)%3], "tools/call", args, nil).Text(); got != "hi "+tool {
			t.Fatalf("2026-07-28 calling %s: %q", tool, got)
		}
	}
}
