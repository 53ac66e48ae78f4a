package router

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The retry's side of a parked call (parking.go has the owner's): a
// 2026-07-28 client's retry, on any instance, carries its answers to the
// hidden task its requestState names and waits for the call's next round
// or its answer (taskrun.Runner.Answer).

// errNoProgress ends a retry's wait for its call's next outcome.
var errNoProgress = errors.New("the parked call did not go on in time")

// parkRetry delivers a retry's answers to the parked call its state names,
// wherever it runs, and answers with the call's next round or its answer.
// Rounds are idempotent: a retry whose answer was lost on the way back
// can be repeated and gets the same; only a retry of a round older than
// that is told the call has moved on.
func (rc *routedCalls) parkRetry(ctx context.Context, v *vhost, c *Call, p *Parking, t *target, st *sealed.RequestState) *jsonrpc.Response {
	id, round := c.Request.ID, st.Round
	var answers map[string]json.RawMessage
	_ = json.Unmarshal(t.params["inputResponses"], &answers)
	wait, cancel := context.WithTimeoutCause(ctx, p.opts.AnswerWithin, errNoProgress)
	defer cancel()
	task, err := p.runner.Answer(wait, parkOwner(c.Principal), st.Park, round, answers)
	switch {
	case errors.Is(err, taskrun.ErrUnknown):
		return errorResponse(id, rpcError(CodeInternalError, "the call this requestState continues has ended"))
	case err != nil && errors.Is(context.Cause(wait), errNoProgress) && ctx.Err() == nil:
		return errorResponse(id, rpcError(CodeInternalError, "the call did not go on within %s of the client's answers", p.opts.AnswerWithin))
	case err != nil && ctx.Err() != nil:
		return errorResponse(id, rpcError(CodeRequestCancelled, "request cancelled by the client"))
	case err != nil:
		return rc.storeUnavailable(id, err)
	case task.VHost != v.name || task.Backend != t.backend:
		return errorResponse(id, invalidParams("invalid requestState: it was not issued for this request and caller"))
	case task.Status == store.TaskCompleted && task.Round == round:
		// Its answer, to this retry or again to a repeat of it (the
		// client may not have received it the first time).
		return parkFinished(c, keptAnswer(task.Result))
	case task.Status == store.TaskFailed && task.StatusMessage == taskrun.LapsedMessage:
		return errorResponse(id, rpcError(CodeInternalError, "the gateway instance holding this call stopped before it answered; the call's outcome is unknown"))
	case store.TaskTerminal(task.Status):
		// It answered an earlier round's retry, or was ended (no retry
		// came in time, its instance shut down) and says why.
		why := ""
		if task.Status == store.TaskFailed && task.StatusMessage != "" {
			why = " (" + task.StatusMessage + ")"
		}
		return errorResponse(id, &jsonrpc.Error{Code: CodeInternalError, Message: "the call this requestState continues has ended" + why})
	case (task.Round == round || task.Round == round+1) && len(task.Outstanding()) > 0:
		// What the round still asks (a retry answers what the latest
		// input_required asked, not the whole round again), or the round
		// it led to, when an earlier retry of this one delivered it.
		return rc.parkAsks(ctx, v, c, t, task.ID, task.Round, task.Outstanding())
	}
	return errorResponse(id, invalidParams("invalid requestState: the call has moved on from that round"))
}
