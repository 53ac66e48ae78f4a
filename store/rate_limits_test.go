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

func TestRateLimits_RefillAfterTheEmissionInterval(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		check := []store.RateCheck{{Key: "k", Limit: 2, Window: 200 * time.Millisecond}}
		for range 2 {
			if v, _ := s.TakeRate(ctx, "demo", check); !v.Allowed {
				t.Fatal("burst refused")
			}
		}
		v, _ := s.TakeRate(ctx, "demo", check)
		if v.Allowed {
			t.Fatal("third request within the window admitted")
		}
		time.Sleep(v.RetryAfter + 5*time.Millisecond) // waiting out the limit is what is tested
		if v, _ := s.TakeRate(ctx, "demo", check); !v.Allowed {
			t.Fatalf("after RetryAfter the request is still refused: %+v", v)
		}
	})
}

// A request refused by one check is counted by none: a caller held back by
// its per-tool limit keeps its per-principal allowance.
func TestRateLimits_AllOrNothing(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		wide := store.RateCheck{Key: "principal", Limit: 3, Window: time.Minute}
		narrow := store.RateCheck{Key: "principal-tool", Limit: 1, Window: time.Minute}
		if v, _ := s.TakeRate(ctx, "demo", []store.RateCheck{wide, narrow}); !v.Allowed {
			t.Fatal("first request refused")
		}
		for range 5 {
			v, err := s.TakeRate(ctx, "demo", []store.RateCheck{wide, narrow})
			if err != nil || v.Allowed || v.Denied != 1 {
				t.Fatalf("%+v, %v; want refused by check 1", v, err)
			}
		}
		for i := range 2 {
			if v, _ := s.TakeRate(ctx, "demo", []store.RateCheck{wide}); !v.Allowed {
				t.Fatalf("wide request %d refused: refusals by the narrow check were counted", i)
			}
		}
		if v, _ := s.TakeRate(ctx, "demo", []store.RateCheck{wide}); v.Allowed {
			t.Fatal("wide limit of 3 admitted a 4th request")
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

// A check with a Count takes that many requests at once, or none: what an
// instance counting a limit locally draws from the shared counter.
func TestRateLimits_CountTakesABatchAllOrNothing(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		batch := []store.RateCheck{{Key: "alice", Limit: 5, Window: time.Minute, Count: 3}}
		if v, err := s.TakeRate(ctx, "demo", batch); err != nil || !v.Allowed {
			t.Fatalf("first batch of 3 of 5: %+v, %v", v, err)
		}
		if v, err := s.TakeRate(ctx, "demo", batch); err != nil || v.Allowed {
			t.Fatalf("second batch of 3 with 2 left: %+v, %v; want refused", v, err)
		}
		one := []store.RateCheck{{Key: "alice", Limit: 5, Window: time.Minute}}
		for i := range 2 {
			if v, err := s.TakeRate(ctx, "demo", one); err != nil || !v.Allowed {
				t.Fatalf("single %d of the 2 left: %+v, %v", i, v, err)
			}
		}
		if v, err := s.TakeRate(ctx, "demo", one); err != nil || v.Allowed {
			t.Fatalf("a sixth of 5: %+v, %v; want refused", v, err)
		}
	})
}

func TestRateLimits_RefuseBadChecks(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		for _, tc := range []struct {
			name  string
			scope string
			check store.RateCheck
		}{
			{"empty scope", "", store.RateCheck{Key: "k", Limit: 1, Window: time.Second}},
			{"empty key", "demo", store.RateCheck{Limit: 1, Window: time.Second}},
			{"zero limit", "demo", store.RateCheck{Key: "k", Window: time.Second}},
			{"tiny window", "demo", store.RateCheck{Key: "k", Limit: 1, Window: time.Microsecond}},
			{"more than one per µs", "demo", store.RateCheck{Key: "k", Limit: 2000, Window: time.Millisecond}},
			{"count above the limit", "demo", store.RateCheck{Key: "k", Limit: 2, Window: time.Second, Count: 3}},
			{"negative count", "demo", store.RateCheck{Key: "k", Limit: 2, Window: time.Second, Count: -1}},
		} {
			if _, err := s.TakeRate(ctx, tc.scope, []store.RateCheck{tc.check}); err == nil {
				t.Errorf("%s: accepted", tc.name)
			}
		}
	})
}
