package storetest

// The contract of the store's oauth records, as every backend must keep it.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

// The OAuthRecords contract, on memory, Redis and Cluster.
func oAuthRecordsContract(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, ok, err := s.OAuthRecord(ctx, "client", "c1"); ok || err != nil {
		t.Fatalf("missing record: %v %v", ok, err)
	}
	if err := s.PutOAuthRecord(ctx, "client", "c1", []byte("one"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if b, ok, err := s.OAuthRecord(ctx, "client", "c1"); !ok || err != nil || string(b) != "one" {
		t.Fatalf("get: %q %v %v", b, ok, err)
	}
	if _, ok, _ := s.OAuthRecord(ctx, "grant", "c1"); ok {
		t.Fatal("kinds are not apart")
	}
	// Swap: only from the value held; nil old only when absent.
	if ok, err := s.SwapOAuthRecord(ctx, "client", "c1", []byte("two"), []byte("three"), time.Minute); ok || err != nil {
		t.Fatalf("swap from a stale value: %v %v", ok, err)
	}
	if ok, err := s.SwapOAuthRecord(ctx, "client", "c1", []byte("one"), []byte("two"), time.Minute); !ok || err != nil {
		t.Fatalf("swap: %v %v", ok, err)
	}
	if ok, _ := s.SwapOAuthRecord(ctx, "client", "c1", nil, []byte("x"), time.Minute); ok {
		t.Fatal("swap from absent over a record")
	}
	if ok, _ := s.SwapOAuthRecord(ctx, "client", "c2", nil, []byte("new"), time.Minute); !ok {
		t.Fatal("swap from absent")
	}
	oAuthRecordsRaces(t, s)
	oAuthRecordsExpiryAndBounds(t, s)
}

// oAuthRecordsRaces: a code is taken once, and of concurrent swaps from
// one value one wins (c1 holds "two" on entry).
func oAuthRecordsRaces(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Take: once, across concurrent takers.
	if err := s.PutOAuthRecord(ctx, "code", "k", []byte("auth-request"), time.Minute); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b, ok, err := s.TakeOAuthRecord(ctx, "code", "k"); err == nil && ok && string(b) == "auth-request" {
				got.Add(1)
			}
		}()
	}
	wg.Wait()
	if got.Load() != 1 {
		t.Fatalf("%d takers got the code, want 1", got.Load())
	}
	// Concurrent swaps from one value: one wins.
	var won atomic.Int32
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, err := s.SwapOAuthRecord(ctx, "client", "c1", []byte("two"), []byte{byte('a' + i)}, time.Minute); err == nil && ok {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d swaps won, want 1", won.Load())
	}
	if err := s.DeleteOAuthRecord(ctx, "client", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.OAuthRecord(ctx, "client", "c1"); ok {
		t.Fatal("deleted record still there")
	}
}

// oAuthRecordsExpiryAndBounds: a record ends at its TTL; ids and blobs
// over their bounds are refused.
func oAuthRecordsExpiryAndBounds(t *testing.T, s store.Store) {
	ctx := context.Background()
	// Expiry and bounds.
	if err := s.PutOAuthRecord(ctx, "consent", "short", []byte("x"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok, _ := s.OAuthRecord(ctx, "consent", "short"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.PutOAuthRecord(ctx, "client", strings.Repeat("x", 400), []byte("x"), time.Minute); err == nil {
		t.Error("an id over the bound was stored")
	}
	if err := s.PutOAuthRecord(ctx, "client", "big", make([]byte, 65<<10), time.Minute); err == nil {
		t.Error("a blob over the bound was stored")
	}
}
