package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

// BenchmarkLoadSession measures the one store round trip of every request
// (HGETALL + PEXPIRE, pipelined) against the shared test Redis, and the
// in-memory store for comparison.
func BenchmarkLoadSession(b *testing.B) {
	ctx := context.Background()
	rs, err := store.NewRedis(srv.URL(), store.RedisOptions{KeyPrefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	mem := store.NewMemory()
	defer mem.Close()
	for name, s := range map[string]store.Store{"redis": rs, "memory": mem} {
		b.Run(name, func(b *testing.B) {
			sess := sampleSession("bench-session")
			if err := s.CreateSession(ctx, sess, time.Hour); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.LoadSession(ctx, "bench-session", time.Hour); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
