package main

import (
	"bytes"
	"context"
	"encoding/base64"
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
// between them.
func TestModern_AdaptersInProcess(t *testing.T) {
	f := modernFixture(t)
	const streamMax = 2 * time.Second
	url := &inProcessURL{invoke: lambdaurl.Wrap(inProcessFunction(t, f, "url", map[string]string{envStreamMax: streamMax.String()}).handler)}
	api := &inProcessHTTPAPI{a: httpadapter.NewV2(inProcessFunction(t, f, "apigw-v2", nil).handler)}

	t.Run("calls", func(t *testing.T) { checkModernCalls(t, f.client(t, "judy"), url, api) })

}
