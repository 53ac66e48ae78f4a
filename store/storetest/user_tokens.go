package storetest

// The contract of the store's user tokens, as every backend must keep it.

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

func userTokensPutGetListDeletePerOwner(t *testing.T, s store.Store) {
	ctx := context.Background()
	alice, bob := "alice-"+t.Name(), "bob-"+t.Name()
	blob := []byte("sealed\x00:binary:\xff")
	if err := s.PutUserToken(ctx, alice, "v/gh", blob, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.PutUserToken(ctx, alice, "v/jira", []byte("j"), time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.UserToken(ctx, alice, "v/gh")
	if err != nil || !ok || !bytes.Equal(got, blob) {
		t.Fatalf("UserToken = %q, %v, %v; want the blob byte for byte", got, ok, err)
	}
	if _, ok, _ := s.UserToken(ctx, bob, "v/gh"); ok {
		t.Fatal("bob reads alice's token")
	}
	names, err := s.UserTokenNames(ctx, alice)
	if err != nil || !slices.Equal(names, []string{"v/gh", "v/jira"}) {
		t.Fatalf("names = %v, %v", names, err)
	}
	if names, _ := s.UserTokenNames(ctx, bob); len(names) != 0 {
		t.Fatalf("bob lists %v", names)
	}
	if err := s.PutUserToken(ctx, alice, "v/gh", []byte("new"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.UserToken(ctx, alice, "v/gh"); string(got) != "new" {
		t.Fatalf("after a replace: %q", got)
	}
	if err := s.DeleteUserToken(ctx, alice, "v/gh"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUserToken(ctx, alice, "never"); err != nil {
		t.Fatalf("deleting a token never stored: %v", err)
	}
	if _, ok, _ := s.UserToken(ctx, alice, "v/gh"); ok {
		t.Fatal("a deleted token is still there")
	}
	if names, _ := s.UserTokenNames(ctx, alice); !slices.Equal(names, []string{"v/jira"}) {
		t.Fatalf("names after delete = %v", names)
	}
}

func userTokensUseOnceIsFirstOnceAcrossConcurrentCallers(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := "link-" + t.Name()
	var firsts atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if first, err := s.UseOnce(ctx, id, time.Minute); err == nil && first {
				firsts.Add(1)
			}
		}()
	}
	wg.Wait()
	if firsts.Load() != 1 {
		t.Fatalf("%d callers were first, want 1", firsts.Load())
	}
	if first, _ := s.UseOnce(ctx, "other-"+t.Name(), time.Minute); !first {
		t.Fatal("another id is refused")
	}
}

func userTokensLockHasOneHolderAndLapses(t *testing.T, s store.Store) {
	ctx := context.Background()
	name := "lock-" + t.Name()
	if ok, err := s.LockUserToken(ctx, name, "a", time.Minute); err != nil || !ok {
		t.Fatalf("a: %v, %v", ok, err)
	}
	if ok, _ := s.LockUserToken(ctx, name, "b", time.Minute); ok {
		t.Fatal("b took a held lock")
	}
	if err := s.UnlockUserToken(ctx, name, "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.LockUserToken(ctx, name, "b", time.Minute); ok {
		t.Fatal("b's unlock released a's lock")
	}
	if err := s.UnlockUserToken(ctx, name, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.LockUserToken(ctx, name, "b", 100*time.Millisecond); !ok {
		t.Fatal("b cannot take a released lock")
	}
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		ok, err := s.LockUserToken(ctx, name, "c", time.Minute)
		return err == nil && ok
	}) {
		t.Fatal("a lock whose holder vanished never lapses")
	}
}

func userTokensRefusesBadInput(t *testing.T, s store.Store) {
	ctx := context.Background()
	long := string(make([]byte, 301))
	for name, call := range map[string]func() error{
		"empty owner": func() error { return s.PutUserToken(ctx, "", "n", []byte("x"), time.Minute) },
		"long name":   func() error { return s.PutUserToken(ctx, "o", long, []byte("x"), time.Minute) },
		"empty blob":  func() error { return s.PutUserToken(ctx, "o", "n", nil, time.Minute) },
		"zero ttl":    func() error { return s.PutUserToken(ctx, "o", "n", []byte("x"), 0) },
		"once ttl":    func() error { _, err := s.UseOnce(ctx, "i", 0); return err },
		"lock holder": func() error { _, err := s.LockUserToken(ctx, "l", "", time.Minute); return err },
	} {
		if call() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
