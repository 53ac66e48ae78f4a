package store_test

// The SigningKeys contract (signing_keys.go), on every store.

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestSigningKeys_SharedAcrossInstances(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		instances := []store.Store{s, s}
		if _, ok := s.(*store.Redis); ok {
			instances[1] = newRedis(t) // a second gateway on the same Redis
		}
		keys := make([][]byte, 8)
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i], errs[i] = instances[i%2].SigningKey(ctx, "jwt", nil) })
		}
		wg.Wait()
		for i := range keys {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if len(keys[i]) != 32 || !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("key %d = %x, want the same 32 bytes as key 0 (%x)", i, keys[i], keys[0])
			}
		}
		keys[0][0]++ // must not alias the stored key
		if again, _ := s.SigningKey(ctx, "jwt", nil); !bytes.Equal(again, keys[1]) {
			t.Error("signing key changed after the caller modified its copy")
		}
		if other, _ := s.SigningKey(ctx, "other", nil); bytes.Equal(other, keys[1]) {
			t.Error("different names share a key")
		}
		if d, ok := pttl(t, s, store.SigningKeyKey(testPrefix, "jwt")); ok && (d < 29*24*time.Hour || d > 30*24*time.Hour) {
			t.Errorf("signing key PTTL = %v, want about 30 days", d)
		}
	})
}

// A candidate becomes the key only when none is stored: on first use, or
// after the store lost its data, so that an instance that survived a Redis
// restart can put back the key it has been signing with.
func TestSigningKeys_CandidateOnlyWhenNoneStored(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		first, second := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
		for i, offer := range [][]byte{first, second, nil} {
			got, err := s.SigningKey(ctx, "k", offer)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, first) {
				t.Fatalf("call %d: key = %x, want the first candidate", i, got)
			}
		}
		first[0] = 9 // the store keeps its own copy
		if got, _ := s.SigningKey(ctx, "k", nil); got[0] != 1 {
			t.Error("the stored key changed with the caller's candidate")
		}
		if _, err := s.SigningKey(ctx, "k", []byte("too short")); err == nil {
			t.Error("a candidate of the wrong size was accepted")
		}
		if _, ok := s.(*store.Redis); ok {
			target.flush(t) // Redis lost its data
			if got, _ := s.SigningKey(ctx, "k", second); !bytes.Equal(got, second) {
				t.Errorf("key after a flush = %x, want the candidate offered", got)
			}
		}
	})
}
