package store

import (
	"context"
	"fmt"
	"time"
)

// RateLimits count requests against limits that every instance shares.
//
// The algorithm is GCRA (the generic cell rate algorithm): each counter is
// one number, the theoretical arrival time of the next request, so a limit
// of N per window lets a burst of N through and then one request every
// window/N, with no boundary effect of fixed windows and no per-request
// log as a sliding window would need. The clock is the store's (Redis
// TIME), so instances whose clocks differ still count alike.
//
// One TakeRate call decides every limit that applies to a request, all or
// nothing, in one round trip: a request refused by one limit is not
// counted by the others, so a caller held back by a per-tool limit does
// not use up its per-principal allowance.
type RateLimits interface {
	// TakeRate admits one request against every check or against none.
	// scope groups the counters (the router passes the virtual host): on
	// Redis it is the hash tag of their keys, so the checks of one
	// request run in one script on Redis Cluster too. Keys are opaque to
	// the store and at most 200 bytes.
	TakeRate(ctx context.Context, scope string, checks []RateCheck) (RateVerdict, error)
}

// RateCheck is one limit a request is counted against.
type RateCheck struct {
	// Key names the counter within the scope.
	Key string
	// Limit requests per Window; Limit ≥ 1, Window ≥ 1ms, and
	// Window/Limit at least 1µs.
	Limit  int64
	Window time.Duration
	// Count is how many requests to take at once (0 means 1): an
	// instance that counts a limit locally takes a batch of them, all
	// or none, and hands them out without the store.
	Count int64
}

// count is how many requests a check takes.
func (c RateCheck) count() int64 { return max(c.Count, 1) }

// RateVerdict is TakeRate's answer.
type RateVerdict struct {
	// Allowed: the request was counted against every check.
	Allowed bool
	// Denied is the index of the first check that refused it (when not
	// Allowed), and RetryAfter how long until that check would admit it.
	Denied     int
	RetryAfter time.Duration
}

// maxRateKey bounds a RateCheck key, so a caller cannot grow Redis keys.
const maxRateKey = 200

// checkRates validates what TakeRate is given, the same on every store.
func checkRates(scope string, checks []RateCheck) error {
	if scope == "" || len(scope) > maxRateKey {
		return fmt.Errorf("store: rate scope must have 1 to %d bytes", maxRateKey)
	}
	for i, c := range checks {
		switch {
		case c.Key == "" || len(c.Key) > maxRateKey:
			return fmt.Errorf("store: rate check %d: key must have 1 to %d bytes", i, maxRateKey)
		case c.Limit < 1:
			return fmt.Errorf("store: rate check %d: limit %d must be at least 1", i, c.Limit)
		case c.Window < time.Millisecond:
			return fmt.Errorf("store: rate check %d: window %v must be at least 1ms", i, c.Window)
		case emission(c) < 1:
			return fmt.Errorf("store: rate check %d: %d per %v is more than one per microsecond", i, c.Limit, c.Window)
		case c.Count < 0 || c.Count > c.Limit:
			return fmt.Errorf("store: rate check %d: count %d must be between 0 and the limit %d", i, c.Count, c.Limit)
		}
	}
	return nil
}

// emission is the GCRA emission interval of a check, in microseconds: the
// time one request "costs".
func emission(c RateCheck) int64 { return c.Window.Microseconds() / c.Limit }

// gcra decides one check at now (µs) given the stored theoretical arrival
// time (0: none). It returns the new arrival time when the request fits,
// or how long (µs) until it would.
func gcra(c RateCheck, stored, now int64) (next, wait int64) {
	tat := max(stored, now)
	next = tat + emission(c)*c.count()
	if allowAt := next - c.Window.Microseconds(); allowAt > now {
		return 0, allowAt - now
	}
	return next, 0
}
