package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
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
			sess := storetest.SampleSession("bench-session")
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

// BenchmarkTakeRate measures the rate-limit round trip a limited
// tools/call adds (one script for every limit of the request), beside
// LoadSession's.
func BenchmarkTakeRate(b *testing.B) {
	ctx := context.Background()
	rs, err := store.NewRedis(srv.URL(), store.RedisOptions{KeyPrefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	mem := store.NewMemory()
	defer mem.Close()
	checks := []store.RateCheck{
		{Key: "principal", Limit: 1_000_000_000, Window: time.Hour},
		{Key: "principal-tool", Limit: 1_000_000_000, Window: time.Hour},
	}
	for name, s := range map[string]store.Store{"redis": rs, "memory": mem} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v, err := s.TakeRate(ctx, "demo", checks); err != nil || !v.Allowed {
					b.Fatal(v, err)
				}
			}
		})
	}
}
