package testsupport

//lint:file-ignore SA1019 sampling and roots are deprecated in 2026-07-28 but still served: this file exercises them on purpose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The asking tools are a 2025-era (session) backend's ways of asking its
// client things mid-call, beyond the streaming tools' one request each:
// what a gateway must turn into input_required rounds for a 2026-07-28
// client. Each reports a failed request with its JSON-RPC code, so a test
// can tell what the gateway answered the backend (-32601 for a capability
// the client lacks, say) from the result the client gets:
//
//	consult {steps}  asks `steps` questions one after the other (default 2),
//	                 sampling "Question <i>?" on odd steps and elicitation
//	                 "Step <i>: proceed?" on even ones, and returns
//	                 "consulted: <answer 1> | <answer 2> | ..."
//	ask_all {}       asks sampling, elicitation and roots at once (three
//	                 concurrent requests) and returns all three answers
//	hold    {tag}    asks for sampling; answered, it returns the answer; its
//	                 request failed, it signals AskFailed with the error and
//	                 waits until its call is cancelled (or the backend
//	                 closes), then signals Cancelled with tag: a backend
//	                 that does not give up on its own.
type consultArgs struct {
	Steps int `json:"steps,omitempty"`
}

// askFailure describes a server-to-client request that failed, with its
// JSON-RPC code when it has one: "failed (code -32601): ...".
func askFailure(err error) string {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return fmt.Sprintf("failed (code %d): %s", werr.Code, werr.Message)
	}
	return "failed: " + err.Error()
}

// sampleText asks the client's model prompt and returns its text answer.
func sampleText(ctx context.Context, ss *mcp.ServerSession, prompt string) (string, error) {
	//lint:ignore SA1019 sampling is deprecated only from protocol 2026-07-28 on; this backend speaks the session protocol.
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		MaxTokens: 50,
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
	})
	if err != nil {
		return "", err
	}
	tc, _ := res.Content.(*mcp.TextContent)
	if tc == nil {
		return "", fmt.Errorf("the model answered %T, not text", res.Content)
	}
	return tc.Text, nil
}

// confirmStep asks the user to confirm and returns the action and content.
func confirmStep(ctx context.Context, ss *mcp.ServerSession, message string) (string, error) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Message: message,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"ok": map[string]any{"type": "boolean"}}},
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %v", res.Action, res.Content["ok"]), nil
}

func addAskingTools(srv *mcp.Server, b *Backend) {
	mcp.AddTool(srv, &mcp.Tool{Name: "consult", Description: "Ask the client's model and user in turn, step after step."},
		func(ctx context.Context, req *mcp.CallToolRequest, args consultArgs) (*mcp.CallToolResult, any, error) {
			ctx, stop := b.untilClosed(ctx)
			defer stop()
			steps := args.Steps
			if steps <= 0 {
				steps = 2
			}
			var answers []string
			for i := 1; i <= steps; i++ {
				var answer string
				var err error
				if i%2 == 1 {
					answer, err = sampleText(ctx, req.Session, fmt.Sprintf("Question %d?", i))
				} else {
					answer, err = confirmStep(ctx, req.Session, fmt.Sprintf("Step %d: proceed?", i))
				}
				if err != nil {
					return textResult(fmt.Sprintf("step %d %s", i, askFailure(err))), nil, nil
				}
				answers = append(answers, answer)
			}
			return textResult("consulted: " + strings.Join(answers, " | ")), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "ask_all", Description: "Ask the client's model, user and roots at once."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ctx, stop := b.untilClosed(ctx)
			defer stop()
			var model, user, roots string
			var wg sync.WaitGroup
			wg.Go(func() {
				if s, err := sampleText(ctx, req.Session, "All at once?"); err != nil {
					model = askFailure(err)
				} else {
					model = s
				}
			})
			wg.Go(func() {
				if s, err := confirmStep(ctx, req.Session, "Together: proceed?"); err != nil {
					user = askFailure(err)
				} else {
					user = s
				}
			})
			wg.Go(func() {
				//lint:ignore SA1019 roots are deprecated only from protocol 2026-07-28 on; this backend speaks the session protocol.
				res, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					roots = askFailure(err)
					return
				}
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				roots = strings.Join(uris, ",")
			})
			wg.Wait()
			return textResult(fmt.Sprintf("model=%s; user=%s; roots=%s", model, user, roots)), nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "hold", Description: "Ask for sampling; if that fails, wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, args blockArgs) (*mcp.CallToolResult, any, error) {
			asking, stop := b.untilClosed(ctx)
			defer stop()
			answer, err := sampleText(asking, req.Session, "Hold on?")
			if err == nil {
				return textResult("model said: " + answer), nil, nil
			}
			b.AskFailed <- askFailure(err)
			select {
			case <-ctx.Done():
				b.Cancelled <- args.Tag
				return nil, nil, ctx.Err()
			case <-b.base.Done(): // never cancelled: the test has failed, and ends
				return nil, nil, errors.New("the backend closed")
			}
		})
}

// untilClosed is ctx, also ended when the backend closes: a request to a
// client that is gone (a gateway instance a test killed) is never
// answered, and a session whose tool waits on one cannot be closed.
func (b *Backend) untilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-b.base.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
