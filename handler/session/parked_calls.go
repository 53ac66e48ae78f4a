package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A parked call is a 2026-07-28 call to a 2025-era backend that asked the
// client something (see router/modern_park.go for why). This instance
// runs the backend call on a goroutine of its own, and a coordinator that
// turns what the backend asks into rounds: the backend's requests of a
// moment (gathered for gatherWindow) become one input_required answer.
//
// Nothing is stored for a call that never asks. Once one does, the call
// gets a record of its own in the store, a session whose id is the park
// id, so the machinery that carries a 2025 client's answers across
// instances carries the rounds too:
//
//   - each backend request of a round is a pending request of the park,
//     owned by this instance: the client's retry, on any instance,
//     delivers each answer with Deliver (locally, or stored and published
//     to this instance, which polls for a lost message);
//   - each round is logged in the park's event log, so the retry's
//     instance knows the round and can ask again for what is missing;
//   - the retry's instance waits for the next outcome (the next round, or
//     the call's answer) as a pending request of its own, which this
//     instance answers the same way;
//   - this instance holds a lease on the park (a call-stream lease) while
//     the call runs: a retry whose call's instance is gone ends with an
//     error within the lease's lifetime instead of waiting.

// A parked call holds goroutines, a backend connection (a stdio process,
// perhaps) and store keys while a person answers, and its principal need
// hold no connection open meanwhile: so a principal's parked calls are
// bounded fleet-wide by Options.ParkedPerPrincipal, counted in the store
// (store.Slots). A call takes its slot when it first parks, renews it
// every third of the call lease while it runs, and gives it back when it
// ends, however it ends; the slot of an instance that died lapses with
// the lease. A call that would park past the bound is not parked: the
// backend call is cancelled and the client answered 429 (-32029) with
// Retry-After. Rounds of a call already parked are never refused.

// DefaultParkedPerPrincipal is Options.ParkedPerPrincipal's default
// (config limits.parked_calls_per_principal).
const DefaultParkedPerPrincipal = 8

// parkRetryAfter is what a client over the bound is told to wait.
const parkRetryAfter = 10 * time.Second

// gatherWindow is how long a round waits, after the backend's first
// request, for more before the client is asked: a backend that asks
// several things at once (concurrently) gets them in one round.
const gatherWindow = 25 * time.Millisecond

// parkRecord is a round as the park's event log keeps it.
type parkRecord struct {
	Round  int                            `json:"round"`
	Inputs map[string]router.InputRequest `json:"inputs"`
	// Answers are the answers retries of the round have brought so far
	// without answering everything (by key): each retry answers only what
	// the latest input_required asked, so the round's answers accumulate
	// here until the last one comes and all go to the call at once.
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Answered: a retry brought the round's last answer and every answer
	// went to the call. Should the call then answer, a later retry of the
	// round (the client's, whose first answer was lost on the way) is
	// given that answer again rather than told the call has ended.
	Answered bool `json:"answered,omitempty"`
	// Lease names the call stream whose lease this instance holds.
	Lease store.CallStreamID `json:"lease"`
}

// parkOutcome is a round's outcome as it crosses instances.
type parkOutcome struct {
	Response json.RawMessage                `json:"response,omitempty"` // a JSON-RPC response
	Inputs   map[string]router.InputRequest `json:"inputs,omitempty"`
	Round    int                            `json:"round,omitempty"`
}

// parkedCall is one call this instance holds.
type parkedCall struct {
	rt     *Runtime
	id     store.SessionID
	pc     router.ParkedCall
	asks   chan *parkAsk
	done   chan *jsonrpc.Response
	cancel context.CancelFunc
	// endWhy, when set, is why the call was ended before it answered (no
	// answer from the client in time, the gateway shutting down): the
	// client's next retry is told it.
	endWhy atomic.Pointer[string]
}

// parkAsk is one backend request waiting for the client.
type parkAsk struct {
	key   store.ServerRequestID // the request's key in the park's pending requests (idKey)
	input string                // the key the client sees in inputRequests
	req   router.InputRequest
}

var _ router.ParkRuntime = (*Runtime)(nil)

// parks tracks the calls this instance holds, for Close.
type parks struct {
	mu     sync.Mutex
	calls  map[store.SessionID]*parkedCall
	closed bool
	wg     sync.WaitGroup
}

// Run runs a 2026-07-28 call that may park (router.ParkRuntime).
func (rt *Runtime) Run(ctx context.Context, p router.ParkedCall, call func(ctx context.Context, asker router.SessionRuntime) *jsonrpc.Response) router.ParkOutcome {
	pk := &parkedCall{rt: rt, id: store.SessionID(store.RandomID("park-")), pc: p,
		asks: make(chan *parkAsk), done: make(chan *jsonrpc.Response, 1)}
	// The call outlives the client's request once it has parked: its own
	// context, ended by Close; the backend's timeout bounds it too.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pk.cancel = cancel
	first := make(chan router.ParkOutcome, 1)
	if !rt.parks.start(pk, func() { pk.done <- call(cctx, pk) }, func() { pk.coordinate(cctx, first) }) {
		cancel()
		return router.ParkOutcome{Err: &jsonrpc.Error{Code: router.CodeInternalError, Message: "the gateway is shutting down"}}
	}
	select {
	case o := <-first:
		return o
	case <-ctx.Done():
		// The client left before the call asked anything or answered: a
		// 2026-07-28 client cancels by closing the request.
		cancel()
		return router.ParkOutcome{Err: &jsonrpc.Error{Code: router.CodeRequestCancelled, Message: "request cancelled by the client"}}
	}
}

// start registers a parked call and starts its two goroutines, which the
// runtime's Close waits for; false when the runtime is closing.
func (ps *parks) start(pk *parkedCall, call, coordinate func()) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return false
	}
	if ps.calls == nil {
		ps.calls = map[store.SessionID]*parkedCall{}
	}
	ps.calls[pk.id] = pk
	ps.wg.Go(call)
	ps.wg.Go(func() {
		defer func() {
			ps.mu.Lock()
			delete(ps.calls, pk.id)
			ps.mu.Unlock()
		}()
		coordinate()
	})
	return true
}

// closeAll cancels every parked call and waits for their goroutines.
func (ps *parks) closeAll() {
	ps.mu.Lock()
	ps.closed = true
	why := "the gateway instance holding it shut down"
	for _, pk := range ps.calls {
		pk.endWhy.CompareAndSwap(nil, &why)
		pk.cancel()
	}
	ps.mu.Unlock()
	ps.wg.Wait()
}

// coordinate turns the call's requests into rounds until it answers.
func (pk *parkedCall) coordinate(ctx context.Context, first chan<- router.ParkOutcome) {
	defer pk.cancel()
	rt := pk.rt
	round, lease := 0, (*CallLog)(nil)
	slot := false // the call holds its principal's parked-call slot
	defer func() {
		if slot {
			pk.giveSlot()
		}
	}()
	renew := time.NewTicker(pk.slotTTL() / 3)
	defer renew.Stop()
	for {
		var asks []*parkAsk
		var final *jsonrpc.Response
		select {
		case final = <-pk.done:
		case a := <-pk.asks:
			asks, final = pk.gather(a)
		case <-renew.C:
			if slot {
				pk.renewSlot(ctx)
			}
			continue
		}
		var out parkOutcome
		if final != nil {
			if why := pk.endWhy.Load(); why != nil {
				final = &jsonrpc.Response{ID: final.ID, Error: &jsonrpc.Error{Code: router.CodeInternalError, Message: "the call has ended: " + *why}}
			}
			data, _ := wire.EncodeMessage(final)
			out.Response = data
		} else {
			if !slot {
				ok, err := pk.takeSlot(ctx)
				if err == nil && !ok {
					// Not parked: nothing is stored, the backend call ends.
					pk.cancel()
					first <- router.ParkOutcome{RetryAfter: parkRetryAfter, Err: &jsonrpc.Error{Code: router.CodeRateLimited,
						Message: fmt.Sprintf("too many calls waiting for this caller's input: %d are parked, the most one caller may have (limits.parked_calls_per_principal); answer or cancel one first", rt.opts.ParkedPerPrincipal),
						Data:    router.LimitData("limits.parked_calls_per_principal", rt.opts.ParkedPerPrincipal)}}
					return
				}
				slot = err == nil
			}
			round++
			out.Round, out.Inputs = round, make(map[string]router.InputRequest, len(asks))
			for _, a := range asks {
				out.Inputs[a.input] = a.req
			}
			var err error
			if !slot {
				err = errors.New("taking the parked call's slot failed")
			} else {
				lease, err = pk.record(ctx, round, asks, out.Inputs, lease)
			}
			if err != nil {
				rt.log.Warn("parking a call failed", "error", err)
				out = parkOutcome{Response: errorMessage(router.CodeInternalError, "session store unavailable: the call could not be held for the client's answer")}
				pk.cancel() // the backend's requests get no answer: end the call
			}
		}
		pk.deliver(ctx, first, round, out)
		if out.Response != nil {
			if lease != nil {
				_, _ = lease.End(context.WithoutCancel(ctx), out.Response)
			}
			return
		}
	}
}

// gather collects a round: the first request, and those that follow
// within gatherWindow. A call that answers meanwhile ends the round with
// its answer (its requests went unanswered: it gave up on them).
func (pk *parkedCall) gather(first *parkAsk) ([]*parkAsk, *jsonrpc.Response) {
	asks := []*parkAsk{first}
	t := time.NewTimer(gatherWindow)
	defer t.Stop()
	for {
		select {
		case a := <-pk.asks:
			asks = append(asks, a)
		case final := <-pk.done:
			return nil, final
		case <-t.C:
			return asks, nil
		}
	}
}

// record makes a round findable from any instance: the park's record (on
// its first round, with this instance's lease), the round's requests as
// pending requests this instance answers, and the round in the log.
func (pk *parkedCall) record(ctx context.Context, round int, asks []*parkAsk, inputs map[string]router.InputRequest, lease *CallLog) (*CallLog, error) {
	rt := pk.rt
	st, ttl := rt.store, rt.parkTTL()
	if lease == nil {
		if err := st.CreateSession(ctx, router.ParkedSession(pk.id, pk.pc.Principal, pk.pc.VHost), ttl); err != nil {
			return nil, err
		}
		id, _ := jsonrpc.MakeID(pk.id)
		lease = rt.NewCallLog(pk.id, id)
		if _, err := lease.Append(ctx, nil); err != nil {
			return nil, err
		}
	}
	for _, a := range asks {
		if err := st.AddPending(ctx, pk.id, a.key, st.InstanceID(), ttl); err != nil {
			return lease, err
		}
	}
	rec, _ := json.Marshal(parkRecord{Round: round, Inputs: inputs, Lease: lease.stream})
	if _, err := st.AppendEvent(ctx, pk.id, rec, rt.opts.EventLogSize, ttl); err != nil {
		return lease, err
	}
	return lease, nil
}

// deliver hands a round's outcome to whoever waits for it: the request
// that started the call (round 0), or the retry that answered the
// previous round, here or on another instance.
func (pk *parkedCall) deliver(ctx context.Context, first chan<- router.ParkOutcome, round int, out parkOutcome) {
	waitingRound := round - 1
	if out.Response != nil {
		waitingRound = round
	}
	if waitingRound == 0 {
		first <- outcomeOf(pk.id, out)
		return
	}
	rt := pk.rt
	key := outcomeKey(waitingRound)
	data, _ := json.Marshal(out)
	resp := &jsonrpc.Response{ID: mustStringID(outcomeID(waitingRound)), Result: data}
	if rt.inflight.deliver(pk.id, key, resp) {
		return
	}
	sess, err := rt.store.LoadSession(ctx, pk.id, rt.parkTTL())
	if err != nil {
		return // the park ended (or the store is down): nobody can take it
	}
	if err := rt.Deliver(ctx, sess, resp); err != nil && !errors.Is(err, ErrNoPendingRequest) {
		rt.log.Warn("handing a parked call's outcome to the retry's instance failed", "error", err)
	}
}

// AskClient is the parked call's router.SessionRuntime: a backend's
// request becomes an input request of the next round; the answer comes
// from the client's retry, on any instance.
func (pk *parkedCall) AskClient(ctx context.Context, _ *router.Call, req *jsonrpc.Request) *jsonrpc.Response {
	rt := pk.rt
	input := store.RandomID("mcpgw-s-")
	id := mustStringID(input)
	key := serverRequestKey(id)
	ch := rt.inflight.addWaiter(pk.id, key)
	defer rt.inflight.removeWaiter(pk.id, key)
	select {
	case pk.asks <- &parkAsk{key: key, input: input, req: router.InputRequest{Method: req.Method, Params: req.Params}}:
	case <-ctx.Done():
		return errorAnswer(router.CodeInternalError, "the call ended before the client was asked")
	}
	defer func() {
		if err := rt.store.RemovePending(context.WithoutCancel(ctx), pk.id, key); err != nil {
			rt.log.Warn("removing a parked call's request failed", "error", err)
		}
	}()
	resp, timedOut := rt.awaitAnswer(ctx, pk.id, key, ch, req.Method)
	if timedOut {
		why := fmt.Sprintf("the client did not answer %s within %s (streams.client_request_timeout)", req.Method, rt.opts.ClientRequestTimeout)
		pk.endWhy.CompareAndSwap(nil, &why)
		// The client's retry never came: nobody will take the call's
		// answer. The backend call ends now (the backend is told it is
		// cancelled) rather than running on, perhaps asking again, until
		// the backend's own timeout.
		pk.cancel()
	}
	return resp
}

// ListenersChanged: a parked call has no GET stream.
func (pk *parkedCall) ListenersChanged(context.Context, store.SessionID) {}

// parkTTL is how long a park's record lives without use: enough for the
// client to answer a round, then to come back.
func (rt *Runtime) parkTTL() time.Duration { return 2*rt.opts.ClientRequestTimeout + time.Minute }

// outcomeKey and outcomeID name the wait for a round's outcome.
func outcomeID(round int) string { return "park-outcome-" + strconv.Itoa(round) }
func outcomeKey(round int) store.ServerRequestID {
	return serverRequestKey(mustStringID(outcomeID(round)))
}
func mustStringID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s)
	return id
}

// outcomeOf turns an outcome into what the router returns.
func outcomeOf(park store.SessionID, out parkOutcome) router.ParkOutcome {
	if out.Response != nil {
		msg, err := wire.Decode(out.Response)
		if resp, ok := msg.(*jsonrpc.Response); err == nil && ok {
			return router.ParkOutcome{Response: resp}
		}
		return parkFailed(router.CodeInternalError, "a parked call's answer could not be read")
	}
	return router.ParkOutcome{Input: out.Inputs, Park: park, Round: out.Round}
}

// outcomeFrom reads an outcome that came as a pending request's answer.
func outcomeFrom(park store.SessionID, resp *jsonrpc.Response) router.ParkOutcome {
	var out parkOutcome
	if resp.Error != nil || json.Unmarshal(resp.Result, &out) != nil {
		return parkFailed(router.CodeInternalError, "a parked call's outcome could not be read")
	}
	return outcomeOf(park, out)
}

func parkFailed(code int64, msg string) router.ParkOutcome {
	return router.ParkOutcome{Err: &jsonrpc.Error{Code: code, Message: msg}}
}

// errorMessage is a JSON-RPC error response, encoded, without an id.
func errorMessage(code int64, msg string) json.RawMessage {
	data, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: mustStringID("park"), Error: &jsonrpc.Error{Code: code, Message: msg}})
	return data
}

// parkSlotSet is the store's slot set of a principal's parked calls: a
// digest, so no principal's name is a key.
func parkSlotSet(principal string) string {
	h := sha256.Sum256([]byte(principal))
	return "park:" + hex.EncodeToString(h[:12])
}

// slotTTL is how long a parked call's slot lives unrenewed: the call
// lease's, so the slot of an instance that died frees with its lease.
func (pk *parkedCall) slotTTL() time.Duration {
	return max(pk.rt.opts.CallLeaseTTL, 30*time.Millisecond)
}

func (pk *parkedCall) takeSlot(ctx context.Context) (bool, error) {
	rt := pk.rt
	ok, err := rt.store.TakeSlot(ctx, parkSlotSet(pk.pc.Principal), string(pk.id), rt.opts.ParkedPerPrincipal, pk.slotTTL())
	if err != nil {
		rt.log.Warn("counting a parked call failed", "error", err)
	}
	return ok, err
}

// renewSlot keeps the call's slot; a renewal the store fails is retried
// at the next tick (the slot lasts three of them).
func (pk *parkedCall) renewSlot(ctx context.Context) {
	if _, err := pk.takeSlot(ctx); err != nil && ctx.Err() == nil {
		pk.rt.log.Debug("renewing a parked call's slot failed", "error", err)
	}
}

// giveSlot gives the slot back as the call ends (its context has ended).
func (pk *parkedCall) giveSlot() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := pk.rt.store.GiveSlot(ctx, parkSlotSet(pk.pc.Principal), string(pk.id)); err != nil {
		pk.rt.log.Warn("freeing a parked call's slot failed; it lapses with the lease", "error", err)
	}
}
