package store

import (
	"context"
	"maps"
	"time"
)

// memRate is one GCRA counter: the theoretical arrival time of the next
// request (µs since the Unix epoch); past it the counter is empty and
// dropped.
type memRate struct{ tat int64 }

// TakeRate implements RateLimits with the process clock: the memory store
// serves one instance, so there is no other clock to agree with.
func (m *Memory) TakeRate(_ context.Context, scope string, checks []RateCheck) (RateVerdict, error) {
	if err := checkRates(scope, checks); err != nil {
		return RateVerdict{}, err
	}
	now := time.Now().UnixMicro()
	m.rateMu.Lock()
	defer m.rateMu.Unlock()
	if m.rates == nil {
		m.rates = map[string]memRate{}
	}
	next := make([]int64, len(checks))
	for i, c := range checks {
		n, wait := gcra(c, m.rates[scope+"\x00"+c.Key].tat, now)
		if wait > 0 {
			return RateVerdict{Denied: i, RetryAfter: time.Duration(wait) * time.Microsecond}, nil
		}
		next[i] = n
	}
	for i, c := range checks {
		m.rates[scope+"\x00"+c.Key] = memRate{tat: next[i]}
	}
	return RateVerdict{Allowed: true}, nil
}

// purgeRates drops the counters that have emptied by now.
func (m *Memory) purgeRates(now time.Time) {
	us := now.UnixMicro()
	m.rateMu.Lock()
	defer m.rateMu.Unlock()
	maps.DeleteFunc(m.rates, func(_ string, r memRate) bool { return r.tat <= us })
}
