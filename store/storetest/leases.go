package storetest

// The contract of the store's leases, as every backend must keep it.

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

// An owner that stops renewing loses the call: the stream is Lost once the
// lease lapses, and a late renewal cannot revive it.
func leasesCallStreamLostWhenTheLeaseLapses(t *testing.T, s store.Store) {
	ctx := context.Background()
	Create(t, s, SampleSession("s1"), time.Minute)
	if _, err := s.StartCallStream(ctx, "s1", "c1", []byte(`1`), nil, 100, 30*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	// Expiry has no signal to wait on: poll the state, bounded.
	if !testsupport.Eventually(t, busWait, func() bool {
		cs, _ := CallEvents(t, s, "c1", "0-0")
		return cs.Lost()
	}) {
		t.Fatal("timed out waiting for the lease to lapse")
	}
	if ok, err := s.RenewCallLease(ctx, "s1", "c1", time.Minute); err != nil || ok {
		t.Fatalf("RenewCallLease after the lease lapsed = %v, %v; want false", ok, err)
	}
}
