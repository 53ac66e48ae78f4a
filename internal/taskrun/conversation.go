package taskrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A backend call that asks its client things while it runs (a 2025-era
// backend's elicitation, sampling or roots requests; a 2026-07-28
// backend's input_required rounds, which the gateway fulfils the same way)
// is one function that blocks in each question until it is answered. A
// Runner drives Steps instead: each returns the call's result, or the
// questions the client must answer before the next Step. A Conversation
// joins the two: it runs the call in a goroutine of its own, and each Step
// delivers the answers to the questions waiting and then waits for the
// call's next questions or its end.
//
// Questions asked at about the same time (multi_input asks two at once;
// a backend's input_required round asks all of its requests at once)
// are one round: a Step waits CollectWindow after the first question for
// more before it returns.

// CollectWindow is how long a Step waits, after a call's first question,
// for the others asked with it.
const CollectWindow = 50 * time.Millisecond

// Ask asks the client req (an input request, {"method", "params"}) and
// returns its answer (the result it would have sent the backend). It
// fails when the conversation ends first.
type Ask func(ctx context.Context, req json.RawMessage) (json.RawMessage, error)

// Call is a backend call a Conversation runs: Run runs it to its answer,
// asking the client through ask (router's gateway-run tasks and parked
// calls).
type Call interface {
	Run(ctx context.Context, ask Ask) (Answer, error)
}

// Answer is a call's answer: Result is what a task keeps of it, made only
// when a task keeps it.
type Answer interface {
	Result() (json.RawMessage, error)
}

// RawResult is an Answer that is its result.
type RawResult json.RawMessage

// Result is r.
func (r RawResult) Result() (json.RawMessage, error) { return json.RawMessage(r), nil }

// CallFunc is a Call whose answer is its result.
type CallFunc func(ctx context.Context, ask Ask) (json.RawMessage, error)

// Run calls f.
func (f CallFunc) Run(ctx context.Context, ask Ask) (Answer, error) {
	result, err := f(ctx, ask)
	if err != nil {
		return nil, err
	}
	return RawResult(result), nil
}

// Conversation is one backend call run as a task's Steps. Step is its
// Step; it must be driven by one Runner run.
type Conversation struct {
	call Call

	ctx    context.Context
	cancel context.CancelCauseFunc
	start  sync.Once
	asks   chan *question
	done   chan struct{} // closed when call returned
	answer Answer
	err    error

	waiting map[string]*question // asked and not yet answered, by key (Step's goroutine only)
	seq     int
}

type question struct {
	req    json.RawMessage
	answer chan json.RawMessage // buffered: Step never blocks on it
}

// Converse returns the conversation of call. call's context carries
// parent's values (the request's: its headers, credentials, trace) but
// not its end: it ends when the task's run ends.
func Converse(parent context.Context, call Call) *Conversation {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	return &Conversation{call: call, ctx: ctx, cancel: cancel, asks: make(chan *question),
		done: make(chan struct{}), waiting: map[string]*question{}}
}

// errEnded is the error a question gets when the conversation ended.
var errEnded = errors.New("taskrun: the task's run ended")

// ask is the Ask the call is given.
func (c *Conversation) ask(ctx context.Context, req json.RawMessage) (json.RawMessage, error) {
	q := &question{req: req, answer: make(chan json.RawMessage, 1)}
	select {
	case c.asks <- q:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ctx.Done():
		return nil, errEnded
	}
	select {
	case a := <-q.answer:
		return a, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ctx.Done():
		return nil, errEnded
	}
}

// Step is the conversation's taskrun.Step. The first one starts the call;
// ctx is the run's, the same for every Step, and its end ends the call.
// A Step that returns because ctx ended has waited for the call to return.
func (c *Conversation) Step(ctx context.Context, answers map[string]json.RawMessage) (Outcome, error) {
	c.start.Do(func() {
		context.AfterFunc(ctx, func() { c.cancel(context.Cause(ctx)) })
		go func() {
			defer close(c.done)
			c.answer, c.err = c.call.Run(c.ctx, c.ask)
		}()
	})
	for key, a := range answers {
		if q := c.waiting[key]; q != nil {
			q.answer <- a
			delete(c.waiting, key)
		}
	}
	var round map[string]json.RawMessage
	var window <-chan time.Time
	for {
		select {
		case <-c.done:
			// It may have ended while asking: what it asked no longer
			// matters, and questions still waiting give up.
			c.cancel(nil)
			if c.err != nil {
				return Outcome{}, c.err
			}
			return Outcome{Answer: c.answer}, nil
		case q := <-c.asks:
			c.seq++
			key := fmt.Sprintf("q%d", c.seq)
			c.waiting[key] = q
			if round == nil {
				round = map[string]json.RawMessage{}
				t := time.NewTimer(CollectWindow)
				defer t.Stop()
				window = t.C
			}
			round[key] = q.req
		case <-window:
			return Outcome{InputRequests: round}, nil
		case <-ctx.Done():
			c.cancel(context.Cause(ctx))
			<-c.done
			return Outcome{}, context.Cause(ctx)
		}
	}
}

// Close ends a conversation whose task never started (Runner.Start
// failed): the call, if running, is told to stop.
func (c *Conversation) Close() { c.cancel(errEnded) }
