package credentials

import (
	"context"
	"testing"
	"time"
)

// What per-user credentials add to a backend request once the token is
// cached: the template expansion and the cache lookup.
func BenchmarkTemplate_Expand(b *testing.B) {
	tpl, err := ParseTemplate("tenant-${claims.org.id}/${claims.sub}", nil)
	if err != nil {
		b.Fatal(err)
	}
	claims := map[string]any{"sub": "alice", "org": map[string]any{"id": "o-7"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tpl.Expand(claims); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSource_CachedToken(b *testing.B) {
	src := NewSource(Settings{Grant: GrantTokenExchange}, nil, nil)
	src.cache.store("alice", "tok", time.Now().Add(time.Hour))
	ctx := WithCaller(context.Background(), Caller{Principal: "alice", Token: "t"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Token(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
