package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcpgw/gateway/internal/wire"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The retry side of a parked call (parked_calls.go holds the owner side):
// a 2026-07-28 client answers a round by calling again with the round's
// requestState, on any instance. Rounds are idempotent: a retry whose
// answers were delivered but whose answer was lost (its connection
// dropped) can be repeated and gets the same next round, or the call's
// answer; only a retry of a round older than that is told the call has
// moved on.

// Resume delivers a retry's answers to a parked call (router.ParkRuntime).
func (rt *Runtime) Resume(ctx context.Context, p router.ParkedCall, park store.SessionID, round int, answers map[string]json.RawMessage) router.ParkOutcome {
	sess, err := rt.store.LoadSession(ctx, park, rt.parkTTL())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return parkFailed(router.CodeInternalError, "the call this requestState continues has ended")
	case err != nil:
		return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
	case sess.Principal != p.Principal || sess.VHost != p.VHost:
		return parkFailed(router.CodeInvalidParams, "invalid requestState: it was not issued for this request and caller")
	}
	rec, call, err := rt.parkState(ctx, park)
	switch {
	case err != nil:
		return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
	case call != nil && call.Done:
		// Its answer went to an earlier retry of this round (given again:
		// the client may not have received it), or to an earlier round's,
		// or to nobody: it was ended (no retry came within the client
		// request timeout, the instance shut down) and says why.
		resp := rt.loggedAnswer(ctx, park, rec.Lease)
		if rec.Answered && rec.Round == round && resp != nil {
			return router.ParkOutcome{Response: resp}
		}
		return parkFailed(router.CodeInternalError, "the call this requestState continues has ended"+endedBecause(resp))
	case call.Lost():
		return parkFailed(router.CodeInternalError, "the gateway instance holding this call stopped before it answered; the call's outcome is unknown")
	case rec == nil || rec.Round > round+1 || rec.Round < round:
		return parkFailed(router.CodeInvalidParams, "invalid requestState: the call has moved on from that round")
	case rec.Round == round+1:
		// This round's answers went (a retry delivered them, and its
		// answer was lost on the way back): the retry is given again what
		// the call asked next, less what later retries have answered.
		return router.ParkOutcome{Input: unanswered(rec), Park: park, Round: rec.Round}
	case rec.Answered:
		// Delivered, and the call has not gone on yet: wait for it again.
		return rt.awaitNext(ctx, park, round, rec.Lease)
	}
	// A request neither this retry nor an earlier one of the round has
	// answered is asked again, alone; the answers so far are kept for the
	// retry that brings the last one (a client answers what the latest
	// input_required asks, not the whole round again).
	got := make(map[string]json.RawMessage, len(rec.Inputs))
	missing := map[string]router.InputRequest{}
	for k, in := range rec.Inputs {
		if a, ok := answers[k]; ok {
			got[k] = a
		} else if a, ok := rec.Answers[k]; ok {
			got[k] = a
		} else {
			missing[k] = in
		}
	}
	if len(missing) > 0 {
		if len(got) > len(rec.Answers) {
			kept := *rec
			kept.Answers = got
			data, _ := json.Marshal(kept)
			if _, err := rt.store.AppendEvent(ctx, park, data, rt.opts.EventLogSize, rt.parkTTL()); err != nil {
				return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
			}
		}
		return router.ParkOutcome{Input: missing, Park: park, Round: round}
	}
	// Recorded before the answers go, so that a retry after the call's
	// answer finds the round answered (see parkRecord.Answered).
	answered := *rec
	answered.Answers, answered.Answered = got, true
	data, _ := json.Marshal(answered)
	if _, err := rt.store.AppendEvent(ctx, park, data, rt.opts.EventLogSize, rt.parkTTL()); err != nil {
		return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
	}
	return rt.deliverRound(ctx, sess, park, rec, got)
}

// deliverRound hands a complete round's answers to the call, wherever it
// runs, and waits for what it does next.
func (rt *Runtime) deliverRound(ctx context.Context, sess *store.Session, park store.SessionID, rec *parkRecord, got map[string]json.RawMessage) router.ParkOutcome {
	round := rec.Round
	key := outcomeKey(round)
	ch := rt.inflight.addWaiter(park, key)
	defer rt.inflight.removeWaiter(park, key)
	if err := rt.store.AddPending(ctx, park, key, rt.store.InstanceID(), rt.parkTTL()); err != nil {
		return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
	}
	defer func() { _ = rt.store.RemovePending(context.WithoutCancel(ctx), park, key) }()
	keys := make([]string, 0, len(rec.Inputs))
	for k := range rec.Inputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := rt.Deliver(ctx, sess, &jsonrpc.Response{ID: mustStringID(k), Result: got[k]}); err != nil {
			if errors.Is(err, ErrNoPendingRequest) {
				return parkFailed(router.CodeInvalidParams, "invalid requestState: the call has moved on from that round")
			}
			return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
		}
	}
	return rt.awaitOutcome(ctx, park, round, key, ch, rec.Lease)
}

// awaitNext waits for the outcome of a round whose answers an earlier
// retry delivered.
func (rt *Runtime) awaitNext(ctx context.Context, park store.SessionID, round int, lease store.CallStreamID) router.ParkOutcome {
	key := outcomeKey(round)
	ch := rt.inflight.addWaiter(park, key)
	defer rt.inflight.removeWaiter(park, key)
	if err := rt.store.AddPending(ctx, park, key, rt.store.InstanceID(), rt.parkTTL()); err != nil {
		return parkFailed(router.CodeInternalError, wire.MsgStoreUnavailable)
	}
	defer func() { _ = rt.store.RemovePending(context.WithoutCancel(ctx), park, key) }()
	return rt.awaitOutcome(ctx, park, round, key, ch, lease)
}

// unanswered is what a round still asks: its inputs no retry has
// answered yet.
func unanswered(rec *parkRecord) map[string]router.InputRequest {
	out := make(map[string]router.InputRequest, len(rec.Inputs))
	for k, in := range rec.Inputs {
		if _, ok := rec.Answers[k]; !ok {
			out[k] = in
		}
	}
	return out
}

// endedBecause is ": why" for a call that ended with an error answer,
// else "".
func endedBecause(resp *jsonrpc.Response) string {
	if resp == nil {
		return ""
	}
	if e := (*jsonrpc.Error)(nil); errors.As(resp.Error, &e) && e.Message != "" {
		return " (" + strings.TrimPrefix(e.Message, "the call has ended: ") + ")"
	}
	return ""
}

// awaitOutcome waits for a parked call's next outcome, and for its
// instance's lease, which ends the wait with an error when it lapses.
//
// The outcome normally comes on ch. A poll finds one whose message was
// lost: an answer stored in the park, or the call's state itself (the
// next round recorded, the call's answer logged), which a retry repeating
// a delivered round relies on (the owner handed the outcome to the retry
// whose connection dropped).
func (rt *Runtime) awaitOutcome(ctx context.Context, park store.SessionID, round int, key store.ServerRequestID, ch chan *jsonrpc.Response, lease store.CallStreamID) router.ParkOutcome {
	t := time.NewTimer(rt.opts.ClientRequestTimeout)
	defer t.Stop()
	poll := time.NewTicker(min(answerPoll, rt.opts.CallLeaseTTL/2))
	defer poll.Stop()
	for {
		select {
		case resp := <-ch:
			return outcomeFrom(park, resp)
		case <-poll.C:
			if resp := rt.storedAnswer(ctx, park, key); resp != nil {
				return outcomeFrom(park, resp)
			}
			rec, call, err := rt.parkState(ctx, park)
			switch {
			case err != nil || rec == nil:
			case rec.Round > round:
				return router.ParkOutcome{Input: unanswered(rec), Park: park, Round: rec.Round}
			case call != nil && call.Done:
				if resp := rt.loggedAnswer(ctx, park, rec.Lease); resp != nil {
					return router.ParkOutcome{Response: resp}
				}
			case call != nil && call.Lost():
				return parkFailed(router.CodeInternalError, "the gateway instance holding this call stopped before it answered; the call's outcome is unknown")
			}
		case <-t.C:
			return parkFailed(router.CodeInternalError, fmt.Sprintf("the call did not go on within %s of the client's answers", rt.opts.ClientRequestTimeout))
		case <-ctx.Done():
			return parkFailed(router.CodeRequestCancelled, "request cancelled by the client")
		}
	}
}

// parkState reads the park's current round and the state of its call
// (answered, or its instance's lease lapsed); nil when the park has no
// round.
func (rt *Runtime) parkState(ctx context.Context, park store.SessionID) (*parkRecord, *store.CallStream, error) {
	evs, err := rt.store.EventsAfter(ctx, park, "0-0", 0)
	if err != nil {
		return nil, nil, err
	}
	var rec *parkRecord
	for _, e := range evs {
		if e.Stream != "" {
			continue
		}
		var r parkRecord
		if json.Unmarshal(e.Data, &r) == nil {
			rec = &r
		}
	}
	if rec == nil {
		return nil, nil, nil
	}
	cs, _, err := rt.store.CallStreamEventsAfter(ctx, park, rec.Lease, "0-0", 1)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return rec, nil, nil
	case err != nil:
		return nil, nil, err
	}
	return rec, cs, nil
}

// loggedAnswer is a parked call's answer as its call stream logged it (the
// stream's last event), nil when it cannot be read.
func (rt *Runtime) loggedAnswer(ctx context.Context, park store.SessionID, lease store.CallStreamID) *jsonrpc.Response {
	_, evs, err := rt.store.CallStreamEventsAfter(ctx, park, lease, "0-0", 0)
	if err != nil || len(evs) == 0 {
		return nil
	}
	o := outcomeOf(park, parkOutcome{Response: evs[len(evs)-1].Data})
	return o.Response
}
