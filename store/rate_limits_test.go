package store_test

// The RateLimits contract (rate_limits.go), on every store.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestRateLimits_AdmitABurstOfLimitThenRefuseWithRetryAfter(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		check := []store.RateCheck{{Key: "alice", Limit: 3, Window: time.Minute}}
		for i := range 3 {
			v, err := s.TakeRate(ctx, "demo", check)
			if err != nil || !v.Allowed {
				t.Fatalf("request %d: %+v, %v; want allowed", i, v, err)
			}
		}
		v, err := s.TakeRate(ctx, "demo", check)
		if err != nil || v.Allowed || v.Denied != 0 {
			t.Fatalf("request 4: %+v, %v; want refused by check 0", v, err)
		}
		// 3 per minute: the next one fits 20s after the first.
		if v.RetryAfter <= 15*time.Second || v.RetryAfter > 20*time.Second {
			t.Fatalf("RetryAfter = %v, want just under 20s", v.RetryAfter)
		}
		if _, ok := s.(*store.Redis); ok {
			d, ok := pttl(t, s, store.RateKey(testPrefix, "demo", "alice"))
			if !ok || d <= 50*time.Second || d > time.Minute {
				t.Fatalf("counter PTTL = %v (%v), want about a minute: it expires when empty", d, ok)
			}
		}
	})
}

// Counters are per key and per scope; instances on one store share them.
func TestRateLimits_KeysAndScopesApartInstancesShared(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		other := store.Store(s)
		if _, ok := s.(*store.Redis); ok {
			other = newRedis(t) // a second gateway on the same Redis
		}
		one := func(key string) []store.RateCheck {
			return []store.RateCheck{{Key: key, Limit: 4, Window: time.Minute}}
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		allowed := 0
		for i := range 10 {
			wg.Go(func() {
				st := s
				if i%2 == 1 {
					st = other
				}
				v, err := st.TakeRate(ctx, "demo", one("alice"))
				if err != nil {
					t.Error(err)
				}
				if v.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if allowed != 4 {
			t.Fatalf("%d of 10 concurrent requests on two instances admitted, want 4", allowed)
		}
		if v, _ := other.TakeRate(ctx, "demo", one("bob")); !v.Allowed {
			t.Fatal("bob's counter is alice's")
		}
		if v, _ := other.TakeRate(ctx, "other-vhost", one("alice")); !v.Allowed {
			t.Fatal("the scope does not separate counters")
		}
	})
}
