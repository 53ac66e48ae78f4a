package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// An endpoint is one way of reaching the gateway: a Lambda event source
// under the emulator, or the plain HTTP server. Tests drive a session
// through any mix of them, with testsupport.Client (Do) or by hand (do).
type endpoint interface {
	testsupport.Endpoint
	name() string
	do(t testing.TB, method, path string, header http.Header, body []byte) *response
}

// doHTTP is an endpoint's Do: req through its do, the answer as an
// http.Response whose body is already whole.
func doHTTP(t testing.TB, ep endpoint, req *http.Request) *http.Response {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			t.Fatal(err)
		}
	}
	r := ep.do(t, req.Method, req.URL.Path, req.Header, body)
	return &http.Response{StatusCode: r.status, Header: r.header, Body: io.NopCloser(bytes.NewReader(r.body))}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// Domains the events name as the request's host, as Lambda and API
// Gateway do; the test config's allowed_hosts lists them.
const (
	functionURLDomain = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws"
	httpAPIDomain     = "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
	restAPIDomain     = "f6g7h8i9j0.execute-api.eu-west-1.amazonaws.com"
	albHost           = "mcp.internal.example.com"
)

// lowerHeaders flattens a header the way Lambda events carry it: lower-case
// names, repeated values joined by commas.
func lowerHeaders(h http.Header, host string) map[string]string {
	m := map[string]string{"host": host}
	for k, v := range h {
		m[strings.ToLower(k)] = strings.Join(v, ",")
	}
	return m
}

// ---- Function URL (MCPGW_LAMBDA_MODE=url) ----

type functionURL struct {
	rie    *rieProcess
	domain string
}

func (e *functionURL) name() string { return "function URL" }

func (e *functionURL) Do(t testing.TB, req *http.Request) *http.Response { return doHTTP(t, e, req) }

func (e *functionURL) do(t testing.TB, method, path string, header http.Header, body []byte) *response {
	t.Helper()
	return parseStreamingResponse(t, e.rie.invoke(e.event(t, method, path, header, body)))
}

// event is the Function URL event for one request.
func (e *functionURL) event(t testing.TB, method, path string, header http.Header, body []byte) []byte {
	t.Helper()
	ev := events.LambdaFunctionURLRequest{
		Version:        "2.0",
		RawPath:        path,
		RawQueryString: "",
		Headers:        lowerHeaders(header, e.domain),
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID:  "anonymous",
			RequestID:  "req",
			DomainName: e.domain,
			APIID:      strings.Split(e.domain, ".")[0],
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "mcpgw-test",
			},
		},
	}
	if len(body) > 0 {
		// Function URLs send binary-safe bodies base64-encoded; lambdaurl
		// then builds a request with ContentLength 0 and a decoding body.
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return mustJSON(t, ev)
}

// parseStreamingResponse reads Lambda's streaming HTTP integration format
// (application/vnd.awslambda.http-integration-response), which the
// emulator returns whole: a JSON prelude with status, headers and cookies,
// eight NUL bytes, then the body.
func parseStreamingResponse(t testing.TB, payload []byte) *response {
	t.Helper()
	prelude, body, ok := bytes.Cut(payload, make([]byte, 8))
	if !ok {
		t.Fatalf("not a streaming integration response (no 8-NUL separator): %q", payload)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Cookies    []string          `json:"cookies"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		t.Fatalf("streaming response prelude %q: %v", prelude, err)
	}
	return &response{status: p.StatusCode, header: toHeader(p.Headers, nil), body: body}
}

// ---- API Gateway HTTP API, payload 2.0 (MCPGW_LAMBDA_MODE=apigw-v2) ----

type httpAPI struct{ rie *rieProcess }

func (e *httpAPI) name() string { return "API Gateway HTTP API" }

func (e *httpAPI) Do(t testing.TB, req *http.Request) *http.Response { return doHTTP(t, e, req) }

func (e *httpAPI) do(t testing.TB, method, path string, header http.Header, body []byte) *response {
	t.Helper()
	ev := events.APIGatewayV2HTTPRequest{
		Version:  "2.0",
		RouteKey: "$default",
		RawPath:  path,
		Headers:  lowerHeaders(header, httpAPIDomain),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", AccountID: "123456789012", Stage: "$default", RequestID: "req",
			APIID: strings.Split(httpAPIDomain, ".")[0], DomainName: httpAPIDomain, DomainPrefix: strings.Split(httpAPIDomain, ".")[0],
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "203.0.113.7", UserAgent: "mcpgw-test",
			},
		},
		Body: string(body),
	}
	var out events.APIGatewayV2HTTPResponse
	unmarshalPayload(t, e.rie.invoke(mustJSON(t, ev)), &out)
	return &response{status: out.StatusCode, header: toHeader(out.Headers, out.MultiValueHeaders), body: decodeBody(t, out.Body, out.IsBase64Encoded)}
}

// ---- API Gateway REST API (MCPGW_LAMBDA_MODE=apigw-v1) ----

type restAPI struct{ rie *rieProcess }

func (e *restAPI) name() string { return "API Gateway REST API" }

func (e *restAPI) Do(t testing.TB, req *http.Request) *http.Response { return doHTTP(t, e, req) }

func (e *restAPI) do(t testing.TB, method, path string, header http.Header, body []byte) *response {
	t.Helper()
	single := lowerHeaders(header, restAPIDomain)
	multi := map[string][]string{}
	for k, v := range single {
		multi[k] = []string{v}
	}
	ev := events.APIGatewayProxyRequest{
		Resource: "/{proxy+}", Path: path, HTTPMethod: method,
		Headers: single, MultiValueHeaders: multi,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: "123456789012", Stage: "prod", RequestID: "req", DomainName: restAPIDomain,
			HTTPMethod: method, Path: "/prod" + path, APIID: strings.Split(restAPIDomain, ".")[0],
			Identity: events.APIGatewayRequestIdentity{SourceIP: "203.0.113.7"},
		},
		Body: string(body),
	}
	var out events.APIGatewayProxyResponse
	unmarshalPayload(t, e.rie.invoke(mustJSON(t, ev)), &out)
	return &response{status: out.StatusCode, header: toHeader(out.Headers, out.MultiValueHeaders), body: decodeBody(t, out.Body, out.IsBase64Encoded)}
}

// ---- Application Load Balancer (MCPGW_LAMBDA_MODE=alb) ----

// alb sends events as a target group does: with multi-value headers off
// (the default) only headers, with them on only multiValueHeaders; and it
// reads only the matching field of the response, as the ALB does.
type alb struct {
	rie        *rieProcess
	multiValue bool
}

func (e *alb) name() string {
	if e.multiValue {
		return "ALB (multi-value headers)"
	}
	return "ALB"
}

func (e *alb) Do(t testing.TB, req *http.Request) *http.Response { return doHTTP(t, e, req) }

func (e *alb) do(t testing.TB, method, path string, header http.Header, body []byte) *response {
	t.Helper()
	ev := events.ALBTargetGroupRequest{
		HTTPMethod: method, Path: path,
		RequestContext: events.ALBTargetGroupRequestContext{ELB: events.ELBContext{
			TargetGroupArn: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/mcpgw/0123456789abcdef"}},
		Body: string(body),
	}
	if e.multiValue {
		ev.MultiValueHeaders = map[string][]string{}
		ev.MultiValueQueryStringParameters = map[string][]string{}
		for k, v := range lowerHeaders(header, albHost) {
			ev.MultiValueHeaders[k] = []string{v}
		}
	} else {
		ev.Headers = lowerHeaders(header, albHost)
		ev.QueryStringParameters = map[string]string{}
	}
	var out events.ALBTargetGroupResponse
	unmarshalPayload(t, e.rie.invoke(mustJSON(t, ev)), &out)
	h := toHeader(out.Headers, nil)
	if e.multiValue {
		h = toHeader(nil, out.MultiValueHeaders)
	}
	return &response{status: out.StatusCode, header: h, body: decodeBody(t, out.Body, out.IsBase64Encoded)}
}

// ---- the plain HTTP server (cmd/gateway) ----

type plainHTTP struct{ base string }

func (e *plainHTTP) name() string { return "plain HTTP server" }

func (e *plainHTTP) Do(t testing.TB, req *http.Request) *http.Response { return doHTTP(t, e, req) }

func (e *plainHTTP) do(t testing.TB, method, path string, header http.Header, body []byte) *response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: b}
}

// ---- helpers ----

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unmarshalPayload(t testing.TB, payload []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(payload, v); err != nil {
		t.Fatalf("function response %q: %v", payload, err)
	}
}

func decodeBody(t testing.TB, body string, b64 bool) []byte {
	t.Helper()
	if !b64 {
		return []byte(body)
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		t.Fatalf("base64 body: %v", err)
	}
	return b
}

func toHeader(single map[string]string, multi map[string][]string) http.Header {
	h := http.Header{}
	for k, v := range single {
		h.Set(k, v)
	}
	for k, vs := range multi {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}
