package sealed

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/store"
)

// An id sealed on one instance opens on another sharing the store's key,
// shows nothing of itself, and opens only for its vhost and backend.
func TestBackendSessions_RoundTripAcrossInstances(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	a := NewBackendSessions(NewKey(st, "backend-session", nil))
	b := NewBackendSessions(NewKey(st, "backend-session", nil))
	const id = store.BackendSessionID("backend-sess-0123456789")
	sealedID, err := a.Seal(ctx, "demo", "fx", id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealedID), string(id)) || !Sealed(sealedID) {
		t.Fatalf("sealed form %q", sealedID)
	}
	if again, _ := a.Seal(ctx, "demo", "fx", id); again == sealedID {
		t.Fatal("two seals of one id are equal: the store learns equality")
	}
	if got, err := b.Open(ctx, "demo", "fx", sealedID); err != nil || got != id {
		t.Fatalf("open on another instance: %q %v", got, err)
	}
	for _, where := range [][2]string{{"demo", "other"}, {"other", "fx"}} {
		if got, err := b.Open(ctx, where[0], where[1], sealedID); !errors.Is(err, ErrBadBackendSession) || got != "" {
			t.Errorf("opened for %v: %q %v", where, got, err)
		}
	}
	if got, err := a.Seal(ctx, "demo", "fx", ""); err != nil || got != "" {
		t.Fatalf("seal of none: %q %v", got, err)
	}
}

// A clear id, as the previous version stored it, reads as itself; "" as
// none.
func TestBackendSessions_ClearLegacyIDAccepted(t *testing.T) {
	s := NewBackendSessions(NewKey(nil, "backend-session", []byte("configured")))
	for _, id := range []store.BackendSessionID{"", "3f9c1a2b-legacy", "mcpgw-sealed"} {
		if got, err := s.Open(context.Background(), "demo", "fx", id); err != nil || got != id {
			t.Errorf("open(%q) = %q, %v", id, got, err)
		}
	}
}

// A sealed form that was tampered with, sealed under another key, or cut
// short does not open: ErrBadBackendSession, never another id.
func TestBackendSessions_TamperedRefused(t *testing.T) {
	ctx := context.Background()
	s := NewBackendSessions(NewKey(store.NewMemory(), "backend-session", nil))
	other := NewBackendSessions(NewKey(nil, "backend-session", []byte("another key")))
	good, _ := s.Seal(ctx, "demo", "fx", "sess-1")
	foreign, _ := other.Seal(ctx, "demo", "fx", "sess-1")
	flipped := []byte(good)
	flipped[len(flipped)-3] ^= 'A' ^ 'B'
	if flipped[len(flipped)-3] == good[len(good)-3] {
		t.Fatal("no change made")
	}
	for name, stored := range map[string]store.BackendSessionID{
		"tampered":    store.BackendSessionID(flipped),
		"another key": foreign,
		"truncated":   good[:len(good)-4],
		"prefix only": backendSessionPrefix,
		"not base64":  backendSessionPrefix + "!!!!",
	} {
		if got, err := s.Open(ctx, "demo", "fx", stored); !errors.Is(err, ErrBadBackendSession) || got != "" {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
}

// The cost of what a reused backend session adds to each request: one
// open of its sealed id (the key known, no store read).
func BenchmarkBackendSessions_Open(b *testing.B) {
	ctx := context.Background()
	s := NewBackendSessions(NewKey(store.NewMemory(), "backend-session", nil))
	sealedID, _ := s.Seal(ctx, "demo", "fx", "0195f3c2-7a1b-7c3d-9e4f-123456789abc")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Open(ctx, "demo", "fx", sealedID); err != nil {
			b.Fatal(err)
		}
	}
}

// Sealing happens once per kept backend session; with a store key it
// reads the key (the memory store here).
func BenchmarkBackendSessions_Seal(b *testing.B) {
	ctx := context.Background()
	s := NewBackendSessions(NewKey(store.NewMemory(), "backend-session", nil))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Seal(ctx, "demo", "fx", "0195f3c2-7a1b-7c3d-9e4f-123456789abc"); err != nil {
			b.Fatal(err)
		}
	}
}
