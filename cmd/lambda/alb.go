package main

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// albHandler fits the ALB adapter to both header formats of a Lambda target
// group. The adapter builds the request URL, hence Host, from the event's
// single-value "host" header, and answers with multiValueHeaders only. But
// an ALB sends and expects one format: with multi-value headers off (the
// default) only headers, and it ignores multiValueHeaders in the response,
// which would lose Content-Type and Mcp-Session-Id; with them on, only
// multiValueHeaders, so Host would be empty. Each event is answered in its
// own format.
func albHandler(a *httpadapter.HandlerAdapterALB) func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	return func(ctx context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		multi := ev.MultiValueHeaders != nil
		if multi && ev.Headers["host"] == "" {
			for k, v := range ev.MultiValueHeaders {
				if strings.EqualFold(k, "host") && len(v) > 0 {
					h := make(map[string]string, len(ev.Headers)+1)
					for k, v := range ev.Headers {
						h[k] = v
					}
					h["host"] = v[0]
					ev.Headers = h
					break
				}
			}
		}
		res, err := a.ProxyWithContext(ctx, ev)
		if err != nil || multi {
			return res, err
		}
		res.Headers = make(map[string]string, len(res.MultiValueHeaders))
		for k, v := range res.MultiValueHeaders {
			res.Headers[k] = strings.Join(v, ",")
		}
		res.MultiValueHeaders = nil
		return res, nil
	}
}
