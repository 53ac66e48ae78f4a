package policy

import (
	"sync"
	"time"
)

// A limit with a batch (RateLimit.Batch > 1) is counted locally: the
// instance takes Batch requests at once from the shared counter and hands
// them out to later calls of the same counter without the store, so a
// 2026-07-28 call, which otherwise touches no store, reaches it once per
// batch. Every request handed out was taken from the shared counter, so
// all instances together never admit more than the limit; what an instance
// took and did not use is lost (the limit is reached a little early), and
// near the limit a batch no longer fits and single requests are taken.

// maxAllowances bounds the counters an instance holds local requests for
// per virtual host: past it, a batch's spare requests are not kept (they
// are lost, as unused ones are), so callers cannot grow the map.
const maxAllowances = 10_000

// Allowance holds the requests this instance took ahead, per counter
// key. It lives with the routing table: a reload starts it empty.
type Allowance struct {
	mu   sync.Mutex
	left map[string]allowance
}

type allowance struct {
	n     int64
	until time.Time // taken ahead for at most the limit's window
}

// Take hands out one request of key taken ahead, if there is one.
func (a *Allowance) Take(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	al, ok := a.left[key]
	if !ok || al.n < 1 || !now.Before(al.until) {
		delete(a.left, key)
		return false
	}
	if al.n--; al.n == 0 {
		delete(a.left, key)
	} else {
		a.left[key] = al
	}
	return true
}

// Give returns n requests to key: a batch's spares, or requests handed out
// for a call another limit then refused.
func (a *Allowance) Give(key string, n int64, now time.Time, window time.Duration) {
	if n < 1 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	al, ok := a.left[key]
	if !ok && len(a.left) >= maxAllowances {
		for k, v := range a.left {
			if !now.Before(v.until) {
				delete(a.left, k)
			}
		}
		if len(a.left) >= maxAllowances {
			return
		}
	}
	if !ok || !now.Before(al.until) {
		al = allowance{until: now.Add(window)}
	}
	al.n += n
	a.left[key] = al
}

// NewAllowance returns an empty allowance when some limit of p is
// batched, nil when none is.
func NewAllowance(p *RateLimitPolicy) *Allowance {
	if !p.Batched() {
		return nil
	}
	return &Allowance{left: map[string]allowance{}}
}
