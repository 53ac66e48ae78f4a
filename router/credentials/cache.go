package credentials

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// tokenCache keeps tokens until shortly before they expire, bounded in
// size, and fetches a missing or stale one once however many requests want
// it at the same moment (singleflight): a burst of first requests, or of
// requests just after expiry, costs the token endpoint one call.
type tokenCache struct {
	now func() time.Time
	max int

	mu      sync.Mutex // never held across I/O
	entries map[string]cachedToken
	flight  singleflight.Group
}

type cachedToken struct {
	value     string
	refreshAt time.Time
}

func newTokenCache(max int, now func() time.Time) *tokenCache {
	return &tokenCache{now: now, max: max, entries: map[string]cachedToken{}}
}

// fetchFunc obtains a token and the time to stop using it; the zero time
// means "use once, do not cache".
type fetchFunc func(ctx context.Context) (token string, refreshAt time.Time, err error)

// get returns key's token, fetching it when none is fresh. The fetch runs
// detached from ctx (bounded by timeout): its result serves every waiter,
// so one caller giving up must not fail the others. ctx bounds only this
// caller's wait.
func (c *tokenCache) get(ctx context.Context, key string, timeout time.Duration, fetch fetchFunc) (string, error) {
	if tok, ok := c.lookup(key); ok {
		return tok, nil
	}
	ch := c.flight.DoChan(key, func() (any, error) {
		if tok, ok := c.lookup(key); ok {
			return tok, nil // a flight that just ended stored it
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		tok, refreshAt, err := fetch(fctx)
		if err != nil {
			return "", err
		}
		c.store(key, tok, refreshAt)
		return tok, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// peek returns a fresh cached token without fetching.
func (c *tokenCache) lookup(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return "", false
	}
	if !c.now().Before(e.refreshAt) {
		delete(c.entries, key)
		return "", false
	}
	return e.value, true
}

// store keeps a token until refreshAt. A full cache first drops what is
// stale, then the entry due soonest: the bound holds whatever the number
// of principals.
func (c *tokenCache) store(key, tok string, refreshAt time.Time) {
	now := c.now()
	if !now.Before(refreshAt) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		soonest, first := "", true
		for k, e := range c.entries {
			if !now.Before(e.refreshAt) {
				delete(c.entries, k)
				continue
			}
			if first || e.refreshAt.Before(c.entries[soonest].refreshAt) {
				soonest, first = k, false
			}
		}
		if len(c.entries) >= c.max && !first {
			delete(c.entries, soonest)
		}
	}
	c.entries[key] = cachedToken{value: tok, refreshAt: refreshAt}
}

// drop forgets key's token.
func (c *tokenCache) drop(key string) {
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}

// len is the number of cached tokens (tests).
func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
