package credentials

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The cache holds at most its bound whatever the number of principals:
// a full cache drops stale entries first, then the one due soonest.
func TestTokenCache_StaysWithinItsBound(t *testing.T) {
	now := time.Now()
	c := newTokenCache(2, func() time.Time { return now })
	fetch := func(d time.Duration) fetchFunc {
		return func(context.Context) (string, time.Time, error) { return fmt.Sprint(d), now.Add(d), nil }
	}
	for i, d := range []time.Duration{time.Minute, 3 * time.Minute, 2 * time.Minute} {
		if _, err := c.get(t.Context(), fmt.Sprint("p", i), time.Second, fetch(d)); err != nil {
			t.Fatal(err)
		}
	}
	if c.len() != 2 {
		t.Fatalf("cache holds %d tokens, bound 2", c.len())
	}
	if _, ok := c.lookup("p0"); ok {
		t.Fatal("the entry due soonest was kept")
	}
	if _, ok := c.lookup("p1"); !ok {
		t.Fatal("an entry due later was dropped")
	}
	// A token already due is used once, never stored.
	if _, err := c.get(t.Context(), "p3", time.Second, fetch(0)); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lookup("p3"); ok {
		t.Fatal("an expired token was cached")
	}
}
