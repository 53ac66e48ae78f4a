package storetest

// The contract of the store's backend sessions, as every backend must keep it.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

func storePrincipalBackendSessionSwapsOnlyFromTheOneKept(t *testing.T, s store.Store) {
	ctx := context.Background()
	owner := fmt.Sprintf("v/b/%d", time.Now().UnixNano())
	swap := func(old, next store.BackendSessionID, want store.BackendSessionID) {
		t.Helper()
		got, err := s.SwapPrincipalBackendSession(ctx, owner, old, next, time.Hour)
		if err != nil || got != want {
			t.Fatalf("swap %q -> %q: kept %q (%v), want %q", old, next, got, err, want)
		}
	}
	if id, err := s.PrincipalBackendSession(ctx, owner, time.Hour); err != nil || id != "" {
		t.Fatalf("a new owner keeps %q (%v)", id, err)
	}
	swap("", "a", "a")
	swap("", "b", "a") // a concurrent request kept its own first
	swap("x", "b", "a")
	swap("a", "b", "b")
	if id, _ := s.PrincipalBackendSession(ctx, owner, time.Hour); id != "b" {
		t.Fatalf("kept %q, want b", id)
	}
	swap("b", "", "")
	if id, _ := s.PrincipalBackendSession(ctx, owner, time.Hour); id != "" {
		t.Fatalf("dropped, yet kept %q", id)
	}
	// The record expires unless used.
	swap("", "c", "c")
	if _, err := s.SwapPrincipalBackendSession(ctx, owner, "c", "d", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// A swap from an id never kept reads the record without refreshing it.
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		id, _ := s.SwapPrincipalBackendSession(ctx, owner, "never", "kept", time.Hour)
		return id == ""
	}) {
		t.Fatal("a principal's backend session never expired")
	}
}

func storeReleasedBackendSessionsAreThoseNoOwnerKeeps(t *testing.T, s store.Store) {
	ctx := context.Background()
	vhost := fmt.Sprintf("vh%d", time.Now().UnixNano())
	sid := store.NewSessionID()
	sess := SampleSession(sid) // its snapshot of "github" keeps up-1
	Create(t, s, sess, time.Hour)
	owner := vhost + "/p/digest"
	if _, err := s.SwapPrincipalBackendSession(ctx, owner, "", "p-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	kept := []store.KeptBackendSession{
		{Session: sid, VHost: vhost, Backend: "github", ID: "up-1"},
		{Session: sid, VHost: vhost, Backend: "github", ID: "up-old"}, // replaced
		{Session: sid, VHost: vhost, Backend: "gone", ID: "up-2"},     // no such snapshot
		{Owner: owner, VHost: vhost, Backend: "p", ID: "p-1"},
		{Owner: owner, VHost: vhost, Backend: "p", ID: "p-0"}, // replaced
	}
	if err := s.TrackBackendSessions(ctx, kept, 0); err != nil {
		t.Fatal(err)
	}
	if got := released(t, s, vhost); !slices.Equal(got, []store.BackendSessionID{"p-0", "up-2", "up-old"}) {
		t.Fatalf("released %v, want p-0, up-2, up-old", got)
	}
	if got := released(t, s, vhost); len(got) != 0 {
		t.Fatalf("released twice: %v", got)
	}
	// Once the owners are gone, the rest goes too.
	if err := s.DeleteSession(ctx, sid); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwapPrincipalBackendSession(ctx, owner, "p-1", "", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.TrackBackendSessions(ctx, []store.KeptBackendSession{kept[0], kept[3]}, 0); err != nil {
		t.Fatal(err)
	}
	if got := released(t, s, vhost); !slices.Equal(got, []store.BackendSessionID{"p-1", "up-1"}) {
		t.Fatalf("released %v, want p-1, up-1", got)
	}
	if err := s.TrackBackendSessions(ctx, []store.KeptBackendSession{{VHost: vhost, Backend: "x", ID: "y"}}, 0); err == nil {
		t.Fatal("an entry with no owner was tracked")
	}
}
