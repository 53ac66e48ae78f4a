package usertokens

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func TestSealer_OpensOnlyWhatItSealedAsThatAndThere(t *testing.T) {
	s, err := NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	blob := s.Seal("token", "alice/v/gh", []byte("secret-token"))
	if bytes.Contains(blob, []byte("secret-token")) {
		t.Fatal("the blob holds the token in clear")
	}
	if got, err := s.Open("token", "alice/v/gh", blob); err != nil || string(got) != "secret-token" {
		t.Fatalf("open: %q %v", got, err)
	}
	tampered := bytes.Clone(blob)
	tampered[len(tampered)-1] ^= 1
	for name, open := range map[string]func() error{
		"tampered":        func() error { _, err := s.Open("token", "alice/v/gh", tampered); return err },
		"another binding": func() error { _, err := s.Open("token", "bob/v/gh", blob); return err },
		"another purpose": func() error { _, err := s.Open("link", "alice/v/gh", blob); return err },
		"another key":     func() error { _, err := other.Open("token", "alice/v/gh", blob); return err },
		"truncated":       func() error { _, err := s.Open("token", "alice/v/gh", blob[:10]); return err },
		"not base64":      func() error { _, err := s.OpenString("link", "", "!!"); return err },
	} {
		if open() == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := NewSealer(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key accepted")
	}
	if s.Owner("alice") == s.Owner("bob") || s.Owner("alice") == other.Owner("alice") || strings.Contains(s.Owner("alice"), "alice") {
		t.Error("owner digests are not keyed per principal")
	}
}

func TestVault_LinksExpireAndTokensAreSealedInTheStore(t *testing.T) {
	s, _ := NewSealer(bytes.Repeat([]byte{7}, 32))
	m := store.NewMemory()
	defer m.Close()
	v := NewVault(m, s, "https://mcp.example.com/", nil)
	l, u := v.ConnectURL("alice", "v", "gh")
	sealed := strings.TrimPrefix(u, "https://mcp.example.com/oauth/connect?l=")
	if got, err := v.OpenLink(sealed); err != nil || got.ID != l.ID || got.Principal != "alice" || got.Backend != "gh" || !got.Exp.Equal(l.Exp) {
		t.Fatalf("open link: %+v %v", got, err)
	}
	v.Now = func() time.Time { return time.Now().Add(LinkLifetime + time.Second) }
	if _, err := v.OpenLink(sealed); err == nil {
		t.Fatal("an expired link opened")
	}
	v.Now = time.Now
	ctx := t.Context()
	if err := v.Put(ctx, "alice", "v", "gh", Token{Access: "at-123", Refresh: "rt-456", Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	blob, ok, _ := m.UserToken(ctx, s.Owner("alice"), "v/gh")
	if !ok || bytes.Contains(blob, []byte("at-123")) || bytes.Contains(blob, []byte("rt-456")) {
		t.Fatalf("stored blob %q (%v) holds the token in clear", blob, ok)
	}
	if tok, ok, err := v.Get(ctx, "alice", "v", "gh"); err != nil || !ok || tok.Access != "at-123" || tok.RefreshAt.IsZero() {
		t.Fatalf("get: %+v %v %v", tok, ok, err)
	}
	// A blob copied under bob's name does not open for him.
	_ = m.PutUserToken(ctx, s.Owner("bob"), "v/gh", blob, time.Hour)
	if _, ok, _ := v.Get(ctx, "bob", "v", "gh"); ok {
		t.Fatal("alice's sealed token opened as bob's")
	}
}
