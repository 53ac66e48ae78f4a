package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/mcpgw/gateway/internal/taskrun"
)

// Tasks the gateway runs for a backend (its tasks: block) outlive the
// request that creates them; a Lambda invocation cannot outlive its
// response. So the invocation that creates a task stores it, with what
// its run needs sealed in the record, under a placeholder lease, and
// invokes this same function asynchronously (InvocationType Event) with
// a small event that names the task (runTaskEvent). That invocation,
// recognised before the HTTP adapters see it (dispatch), takes the task
// over and runs the backend call as the server would, until it ends or
// shortly before the function's time limit, where the task fails saying
// so. Lambda retries a failed asynchronous invocation twice, and may
// deliver one twice: a task already taken over or settled is left alone
// (taskrun.Runner.Adopt), and the event answers without error, so
// nothing is retried for it.

// runTaskKind is runTaskEvent's mcpgw member.
const runTaskKind = "run-task"

// runTaskEvent is the payload of the asynchronous invocation that runs a
// task. No HTTP event Lambda delivers has a top-level "mcpgw" member.
type runTaskEvent struct {
	Kind  string `json:"mcpgw"`
	Owner string `json:"owner"`
	ID    string `json:"id"`
}

// parseRunTask reports whether payload is a run-task event.
func parseRunTask(payload []byte) (runTaskEvent, bool) {
	var ev runTaskEvent
	if !bytes.Contains(payload, []byte(`"mcpgw"`)) || json.Unmarshal(payload, &ev) != nil ||
		ev.Kind != runTaskKind || ev.Owner == "" || ev.ID == "" {
		return runTaskEvent{}, false
	}
	return ev, true
}

// dispatch is the function's handler: a run-task event runs its task,
// any other payload is the mode's HTTP event, given to inner as the
// runtime would have (the same JSON decoding, the same response value:
// a streamed response stays streamed).
func dispatch[E, R any](runTask func(context.Context, runTaskEvent) (any, error), inner func(context.Context, E) (R, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, payload json.RawMessage) (any, error) {
		if ev, ok := parseRunTask(payload); ok {
			return runTask(ctx, ev)
		}
		var e E
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, err
		}
		return inner(ctx, e)
	}
}

// taskDeadlineMargin is how long before the invocation's time limit a
// task's run is stopped and the task settled failed (a fifth of the time
// left, for short limits): the backend call is cancelled and the status
// written before Lambda stops the invocation.
const taskDeadlineMargin = 10 * time.Second

// runTaskResult is what a run-task invocation answers (its result is
// discarded by Lambda for an asynchronous invocation; the emulator and
// tests read it).
type runTaskResult struct {
	Kind   string `json:"mcpgw"`
	ID     string `json:"id"`
	Status string `json:"status"` // ran, skipped
}

// runTask runs ev's task in this invocation. An error (the gateway could
// not be assembled, the store did not answer) is the invocation's, which
// Lambda retries; a task that is not to be run here is no error.
func (l *lazyApp) runTask(ctx context.Context, ev runTaskEvent) (any, error) {
	a, err := l.get()
	if err != nil {
		l.log.Error("mcpgw lambda: assembling the gateway failed", "error", err)
		return nil, fmt.Errorf("the gateway could not start: %w", err)
	}
	if d, ok := ctx.Deadline(); ok {
		margin := min(taskDeadlineMargin, time.Until(d)/5)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-margin))
		defer cancel()
	}
	start := time.Now()
	l.log.Info("mcpgw lambda: running a task", "task", ev.ID)
	err = a.RunTask(ctx, ev.Owner, ev.ID)
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushTimeout)
	defer cancel()
	if ferr := a.FlushTraces(flush); ferr != nil {
		l.log.Warn("mcpgw lambda: flushing trace spans failed", "error", ferr)
	}
	if a.Audit != nil {
		if ferr := a.Audit.Flush(flush); ferr != nil {
			l.log.Warn("mcpgw lambda: flushing audit lines failed", "error", ferr)
		}
	}
	switch {
	case errors.Is(err, taskrun.ErrNotAdopted), errors.Is(err, taskrun.ErrUnknown):
		l.log.Info("mcpgw lambda: the task is settled, gone or run elsewhere: left alone", "task", ev.ID)
		return runTaskResult{Kind: runTaskKind, ID: ev.ID, Status: "skipped"}, nil
	case err != nil:
		l.log.Error("mcpgw lambda: running a task failed", "task", ev.ID, "error", err)
		return nil, err
	}
	l.log.Info("mcpgw lambda: the task's run ended", "task", ev.ID, "duration_ms", time.Since(start).Milliseconds())
	return runTaskResult{Kind: runTaskKind, ID: ev.ID, Status: "ran"}, nil
}

// startDispatch hands the runtime a handler that runs tasks and passes
// everything else to inner.
func startDispatch[E, R any](l *lazyApp, inner func(context.Context, E) (R, error)) {
	lambda.StartHandlerFunc(dispatch(l.runTask, inner))
}

// asyncLauncher launches a task's run as an asynchronous invocation of
// the function itself (router.TaskLauncher). Its AWS client is made on
// the first launch: init makes no AWS call. The endpoint is the SDK's:
// AWS_ENDPOINT_URL_LAMBDA overrides it (the tests' fake Lambda API).
type asyncLauncher struct {
	function string // AWS_LAMBDA_FUNCTION_NAME
	log      *slog.Logger

	once   sync.Once
	client *awslambda.Client
	err    error
}

func (l *asyncLauncher) Launch(ctx context.Context, owner, id string) error {
	l.once.Do(func() {
		cfg, err := awsconfig.LoadDefaultConfig(context.WithoutCancel(ctx))
		if err != nil {
			l.err = fmt.Errorf("AWS configuration: %w", err)
			return
		}
		l.client = awslambda.NewFromConfig(cfg)
	})
	if l.err != nil {
		return l.err
	}
	payload, err := json.Marshal(runTaskEvent{Kind: runTaskKind, Owner: owner, ID: id})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	_, err = l.client.Invoke(ctx, &awslambda.InvokeInput{
		FunctionName:   aws.String(l.function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        payload,
	})
	if err != nil {
		return fmt.Errorf("invoking %s asynchronously (lambda:InvokeFunction): %w", l.function, err)
	}
	l.log.Info("mcpgw lambda: task launched", "task", id)
	return nil
}

// launchTimeout bounds the asynchronous invoke that launches a task.
const launchTimeout = 10 * time.Second
