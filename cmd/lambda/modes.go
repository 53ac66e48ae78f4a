package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// mode is how requests reach the function, chosen by MCPGW_LAMBDA_MODE.
type mode string

const (
	// modeURL: a Function URL with InvokeMode RESPONSE_STREAM. Responses
	// stream, so SSE events (progress, server requests, GET streams) reach
	// the client as they happen.
	modeURL mode = "url"
	// modeAPIGWv2: API Gateway HTTP API, payload format 2.0. Buffered.
	modeAPIGWv2 mode = "apigw-v2"
	// modeAPIGWv1: API Gateway REST API with a Lambda proxy integration.
	// Buffered.
	modeAPIGWv1 mode = "apigw-v1"
	// modeALB: an Application Load Balancer target group. Buffered.
	modeALB mode = "alb"
)

var modes = []mode{modeURL, modeAPIGWv2, modeAPIGWv1, modeALB}

// parseMode reads MCPGW_LAMBDA_MODE; empty means url.
func parseMode(s string) (mode, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return modeURL, nil
	}
	for _, m := range modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("%s: unknown mode %q (want one of %s)", envMode, s, strings.Join(names, ", "))
}

// buffered reports whether the mode's adapter holds the whole response
// until the handler returns.
func (m mode) buffered() bool { return m != modeURL }

// wrap puts the mode's middleware around the gateway, outermost first: in
// url mode a Flush for the streaming writer (withFlush); panic recovery
// (the Function URL adapter runs the handler on its own goroutine, where a
// panic would end the process); the end of each request before the
// invocation's time limit; and in buffered modes the refusal of GET
// streams, of listens, and of server-to-client requests that could never
// be answered.
func (m mode) wrap(h http.Handler, streamMax time.Duration, log *slog.Logger) http.Handler {
	if m.buffered() {
		h = refuseGETStreams(refuseListens(withoutServerRequests(h)))
		streamMax = 0 // no GET streams here
	}
	h = recoverPanics(log, endBeforeDeadline(streamMax, h))
	if !m.buffered() {
		h = withFlush(h)
	}
	return h
}

// start hands h to the Lambda runtime, behind dispatch, which gives l
// the run-task events (tasks.go); it does not return.
func (m mode) start(h http.Handler, basePath string, l *lazyApp) {
	switch m {
	case modeAPIGWv2:
		a := httpadapter.NewV2(h)
		a.StripBasePath(basePath)
		startDispatch(l, a.ProxyWithContext)
	case modeAPIGWv1:
		a := httpadapter.New(h)
		a.StripBasePath(basePath)
		startDispatch(l, a.ProxyWithContext)
	case modeALB:
		a := httpadapter.NewALB(h)
		a.StripBasePath(basePath)
		startDispatch(l, albHandler(a))
	default:
		// Only for Function URLs with InvokeMode RESPONSE_STREAM: the
		// response is Lambda's streaming HTTP integration format
		// (lambdaurl.Start, behind dispatch).
		startDispatch(l, lambdaurl.Wrap(withURLCookies(h))) // url_cookies.go
	}
}
