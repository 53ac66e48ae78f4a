package storetest

// The contract of the store's rate limits, as every backend must keep it.

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func rateLimitsRefillAfterTheEmissionInterval(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

// A request refused by one check is counted by none: a caller held back by
// its per-tool limit keeps its per-principal allowance.
func rateLimitsAllOrNothing(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

// A check with a Count takes that many requests at once, or none: what an
// instance counting a limit locally draws from the shared counter.
func rateLimitsCountTakesABatchAllOrNothing(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}

func rateLimitsRefuseBadChecks(t *testing.T, s store.Store) {
	ctx := context.Background()
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
}
