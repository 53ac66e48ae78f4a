package store_test

// The UserTokens contract (user_tokens.go), on every store.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

func TestUserTokens_ExpireEachOnItsOwn(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		o := "carol-" + t.Name()
		if err := s.PutUserToken(ctx, o, "short", []byte("s"), 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if err := s.PutUserToken(ctx, o, "long", []byte("l"), time.Minute); err != nil {
			t.Fatal(err)
		}
		if !testsupport.Eventually(t, 5*time.Second, func() bool {
			_, ok, err := s.UserToken(ctx, o, "short")
			return err == nil && !ok
		}) {
			t.Fatal("a token past its ttl is still read")
		}
		if names, _ := s.UserTokenNames(ctx, o); !slices.Equal(names, []string{"long"}) {
			t.Fatalf("names = %v, want the live one alone", names)
		}
		if _, ok := s.(*store.Redis); ok {
			if d, ok := pttl(t, s, store.UserTokensKey(testPrefix, o)); !ok || d <= 50*time.Second {
				t.Fatalf("owner key PTTL = %v (%v), want the longest token's minute", d, ok)
			}
		}
	})
}
