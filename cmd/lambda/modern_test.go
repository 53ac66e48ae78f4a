package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// Protocol 2026-07-28 through the function: requests that stand alone
// (no session), multi-round-trip requests whose rounds may take any
// endpoint, and subscriptions/listen, which needs a streamed response:
// the Function URL's.

// invocationLimit is the time limit the in-process invocations run under.
const invocationLimit = 30 * time.Second

// inProcessURL is a Function URL (response streaming) invoking the
// function's handler in this process through lambdaurl: the body reaches
// the reader as the handler writes it, as on Lambda.
type inProcessURL struct {
	invoke func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)
}

func (e *inProcessURL) Do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events.LambdaFunctionURLRequest{
		RawPath: req.URL.Path, Headers: lowerHeaders(req.Header, functionURLDomain),
		Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true,
		RequestContext: events.LambdaFunctionURLRequestContext{DomainName: functionURLDomain,
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: req.Method}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), invocationLimit)
	res, err := e.invoke(ctx, ev)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h := http.Header{}
	for k, v := range res.Headers {
		h.Set(k, v)
	}
	rc, ok := res.Body.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(res.Body)
	}
	return &http.Response{StatusCode: res.StatusCode, Header: h, Body: cancelOnClose{rc, cancel}}
}

// cancelOnClose ends the invocation when its response is closed: the
// client went away.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { c.cancel(); return c.ReadCloser.Close() }

// inProcessHTTPAPI is API Gateway's HTTP API (buffered) invoking the
// function's handler in this process through httpadapter.
type inProcessHTTPAPI struct{ a *httpadapter.HandlerAdapterV2 }

func (e *inProcessHTTPAPI) Do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	ev := events.APIGatewayV2HTTPRequest{RawPath: req.URL.Path, Headers: lowerHeaders(req.Header, httpAPIDomain), Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: httpAPIDomain,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: req.Method}}}
	ctx, cancel := context.WithTimeout(context.Background(), invocationLimit)
	defer cancel()
	res, err := e.a.ProxyWithContext(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Response{StatusCode: res.StatusCode, Header: toHeader(res.Headers, res.MultiValueHeaders),
		Body: io.NopCloser(bytes.NewReader(decodeBody(t, res.Body, res.IsBase64Encoded)))}
}

// modernFixture is the fixture with stateless backends (which speak
// 2026-07-28) that have the modern tools.
func modernFixture(t *testing.T) *fixture {
	return newFixtureWith(t, testsupport.BackendOptions{Stateless: true, ModernTools: true})
}

// inProcessFunction sets the function up in this process for mode, with
// extra environment; the config's secrets come from the process
// environment, so callers cannot run in parallel.
func inProcessFunction(t *testing.T, f *fixture, mode string, extra map[string]string) *function {
	t.Helper()
	for _, kv := range f.secrets() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	env := map[string]string{envConfigYAML: f.configYAML, envRedisURL: redisSrv.URL(), envMode: mode}
	for k, v := range extra {
		env[k] = v
	}
	fn, err := setup(envMap(env), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fn.lazy.close)
	return fn
}

var elicitationCaps = map[string]any{"elicitation": map[string]any{}}

// checkModernCalls runs a list, a call and a two-round call through the
// endpoints (each round on the next one), all sessionless.
func checkModernCalls(t *testing.T, c *testsupport.Client, eps ...testsupport.Endpoint) {
	t.Helper()
	ep := func(i int) testsupport.Endpoint { return eps[i%len(eps)] }
	list := c.ModernRequest(ep(0), "tools/list", nil, nil)
	if tools := list.ToolNames(); !slices.Contains(tools, "gateway-one-greet") || !slices.Contains(tools, "gateway-two-echo") {
		t.Fatalf("tools/list: %v", tools)
	}
	if res := list.Result(); res["resultType"] != "complete" || res["cacheScope"] == nil {
		t.Fatalf("tools/list result %s: want a complete result with cache hints", list.Body)
	}
	if list.Header.Get("Mcp-Session-Id") != "" {
		t.Fatal("a 2026-07-28 request was given a session")
	}
	if got := c.ModernRequest(ep(1), "tools/call", map[string]any{"name": "gateway-two-echo", "arguments": map[string]any{"text": "hi"}}, nil).Text(); got != "hi" {
		t.Fatalf("echo: %q", got)
	}
	first := c.ModernRequest(ep(2), "tools/call", map[string]any{"name": "gateway-one-greet"}, elicitationCaps).Result()
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("greet, first round: %v", first)
	}
	retry := c.ModernRequest(ep(3), "tools/call", map[string]any{"name": "gateway-one-greet", "requestState": state,
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}, elicitationCaps)
	if got := retry.Text(); got != "Hello, Ada!" {
		t.Fatalf("greet, second round: %s", retry.Body)
	}
}

// In process: 2026-07-28 requests through the Function URL adapter and
// the HTTP API adapter, a multi-round-trip request's rounds alternating
// between them; and a listen through the Function URL, whose
// acknowledgement and notifications reach the client while the
// invocation runs, and which ends with its result at
// MCPGW_LAMBDA_STREAM_MAX, long before the invocation's time limit;
// through the HTTP API, which buffers, a listen is refused at once.
func TestModern_AdaptersInProcess(t *testing.T) {
	f := modernFixture(t)
	const streamMax = 2 * time.Second
	url := &inProcessURL{invoke: lambdaurl.Wrap(inProcessFunction(t, f, "url", map[string]string{envStreamMax: streamMax.String()}).handler)}
	api := &inProcessHTTPAPI{a: httpadapter.NewV2(inProcessFunction(t, f, "apigw-v2", nil).handler)}

	t.Run("calls", func(t *testing.T) { checkModernCalls(t, f.client(t, "judy"), url, api) })

	t.Run("listen", func(t *testing.T) {
		c := f.client(t, "judy")
		two := f.backends["gateway-two"]
		acks := two.Count(testsupport.ListenAcknowledged)
		start := time.Now()
		s := c.ModernStream(url, "l-1", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
		ack := s.Next()
		if ack.Method() != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first event %s, want the acknowledgement", ack.Data)
		}
		if !two.WaitCount(testsupport.ListenAcknowledged, acks+1, 10*time.Second) {
			t.Fatal("gateway-two acknowledged no listen")
		}
		c.ModernRequest(api, "tools/call", map[string]any{"name": "gateway-two-add_tool", "arguments": map[string]any{"name": "late"}}, nil).Result()
		if ev := s.Next(); ev.Method() != "notifications/tools/list_changed" || !strings.Contains(ev.Data, `"l-1"`) {
			t.Fatalf("after a tool was added: %s, want tools/list_changed tagged l-1", ev.Data)
		}
		end := s.Next()
		var res struct {
			ID     string         `json:"id"`
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal([]byte(end.Data), &res); err != nil || res.ID != "l-1" || res.Result["resultType"] != "complete" {
			t.Fatalf("last event %s, want the listen's result", end.Data)
		}
		if d := time.Since(start); d > invocationLimit/2 {
			t.Fatalf("the listen ended after %v: MCPGW_LAMBDA_STREAM_MAX (%v) does not bound it", d, streamMax)
		}
		s.ExpectEnd(10 * time.Second)
	})

	t.Run("listen refused at once where responses are buffered", func(t *testing.T) {
		start := time.Now()
		r := f.client(t, "judy").ModernRequest(api, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil)
		checkListenRefused(t, r, time.Since(start))
	})
}

// checkListenRefused asserts a buffered endpoint's prompt refusal of a
// subscriptions/listen: its notifications could reach the client only
// once the invocation ended, so it would hang until the time limit.
func checkListenRefused(t *testing.T, r *testsupport.Reply, took time.Duration) {
	t.Helper()
	if e := r.Error(); r.Status != http.StatusNotFound || e == nil || e.Code != -32601 || !strings.Contains(e.Message, "Function URL") {
		t.Errorf("subscriptions/listen: %d %s, want 404 and -32601 pointing to the Function URL", r.Status, r.Body)
	} else if id := string(r.Final().ID); id == "" || id == "null" {
		t.Errorf("the refusal does not name the listen's id: %s", r.Body)
	}
	if took > 5*time.Second {
		t.Errorf("the refusal took %v", took)
	}
}

// Under the emulator: 2026-07-28 requests through the Function URL, a
// multi-round-trip request's rounds alternating between the function and
// the plain server (the request-state key is the store's), and a listen.
// The emulator hands over a streamed response only once the invocation
// ends, so what is observable is the whole stream: the acknowledgement
// first, the change made meanwhile through the plain server, and the
// listen's result last, at MCPGW_LAMBDA_STREAM_MAX rather than at the
// function's time limit. (That the events reach the client as they happen
// is TestModern_AdaptersInProcess's to show.)
func TestFunctionURL_ModernRequestsAndAListenBoundedByStreamMax(t *testing.T) {
	t.Parallel()
	f := modernFixture(t)
	const streamMax = 3 * time.Second
	lam := &functionURL{rie: startRIE(t, f.lambdaEnv("url", envStreamMax+"="+streamMax.String())...), domain: functionURLDomain}
	plain := f.startPlain()
	c := f.client(t, "kim")
	checkModernCalls(t, c, lam, plain)

	two := f.backends["gateway-two"]
	acks := two.Count(testsupport.ListenAcknowledged)
	params := map[string]any{"notifications": map[string]any{"toolsListChanged": true}}
	h := c.Header("text/event-stream")
	h.Set("Content-Type", "application/json")
	for k, v := range testsupport.ModernHeaders("subscriptions/listen", params) {
		h.Set(k, v)
	}
	ev := lam.event(t, http.MethodPost, c.Path(), h, mustJSON(t, testsupport.ModernMessage("l-9", "subscriptions/listen", params, nil)))
	type result struct {
		payload []byte
		err     error
		took    time.Duration
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		b, err := lam.rie.tryInvoke(ev)
		done <- result{b, err, time.Since(start)}
	}()
	if !two.WaitCount(testsupport.ListenAcknowledged, acks+1, 10*time.Second) {
		t.Fatal("the invocation's listen reached no backend")
	}
	c.ModernRequest(plain, "tools/call", map[string]any{"name": "gateway-two-add_tool", "arguments": map[string]any{"name": "rie"}}, nil).Result()

	var res result
	select {
	case res = <-done:
	case <-time.After(functionTimeout + 15*time.Second):
		t.Fatal("the listen's invocation did not end")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.took > functionTimeout/2 || res.took < streamMax-500*time.Millisecond {
		t.Errorf("the listen ended after %v, want about MCPGW_LAMBDA_STREAM_MAX (%v)", res.took, streamMax)
	}
	out := parseStreamingResponse(t, res.payload)
	r := testsupport.ParseReply(t, out.status, out.header, out.body)
	if !r.SSE || len(r.Messages) != 3 || r.Messages[0].Method != "notifications/subscriptions/acknowledged" ||
		r.Messages[1].Method != "notifications/tools/list_changed" || !strings.Contains(string(r.Messages[1].Params), `"l-9"`) ||
		string(r.Messages[2].ID) != `"l-9"` || r.Messages[2].Result == nil {
		t.Fatalf("the listen's stream: %d %s\nwant the acknowledgement, tools/list_changed tagged l-9, then the listen's result", out.status, out.body)
	}
}
