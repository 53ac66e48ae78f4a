package store_test

// The Leases contract (leases.go), on every store.

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

func TestLeases_StreamClaimHandover(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		storetest.Create(t, s, storetest.SampleSession("s1"), time.Minute)
		claim := func(owner, wantPrev string) {
			t.Helper()
			if prev, err := s.ClaimStream(ctx, "s1", owner, time.Minute); err != nil || prev != wantPrev {
				t.Fatalf("ClaimStream(%s) = %q, %v; want %q", owner, prev, err, wantPrev)
			}
		}
		refresh := func(owner string, want bool) {
			t.Helper()
			if held, err := s.RefreshStream(ctx, "s1", owner, time.Hour); err != nil || held != want {
				t.Fatalf("RefreshStream(%s) = %v, %v; want %v", owner, held, err, want)
			}
		}
		release := func(owner string) {
			t.Helper()
			if err := s.ReleaseStream(ctx, "s1", owner); err != nil {
				t.Fatalf("ReleaseStream(%s): %v", owner, err)
			}
		}
		claim("A", "")
		claim("B", "A")
		refresh("A", false)
		release("A") // no-op: B holds it
		refresh("B", true)
		if d, ok := pttl(t, s, store.StreamKey(testPrefix, "s1")); ok && d < 59*time.Minute {
			t.Errorf("claim PTTL after refresh = %v, want about 1h", d)
		}
		release("B")
		refresh("B", false)
		release("B") // nothing to release
		claim("A", "")

		if _, err := s.ClaimStream(ctx, "s1", "A", 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		waitTTL(t, s, 50*time.Millisecond)
		refresh("A", false)
		claim("B", "")
	})
}
