package store_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestStore_SigningKeySharedAcrossInstances(t *testing.T) {
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
			wg.Go(func() { keys[i], errs[i] = instances[i%2].SigningKey(ctx, "jwt") })
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
		if again, _ := s.SigningKey(ctx, "jwt"); !bytes.Equal(again, keys[1]) {
			t.Error("signing key changed after the caller modified its copy")
		}
		if other, _ := s.SigningKey(ctx, "other"); bytes.Equal(other, keys[1]) {
			t.Error("different names share a key")
		}
		if d, ok := pttl(t, s, store.SigningKeyKey(testPrefix, "jwt")); ok && (d < 29*24*time.Hour || d > 30*24*time.Hour) {
			t.Errorf("signing key PTTL = %v, want about 30 days", d)
		}
	})
}
