package store_test

// Redis-only assertions; the shared contract is in store_test.go.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRedis_EveryKeyHasTTL(t *testing.T) {
	ctx := context.Background()
	r := newRedis(t)
	if err := srv.FlushAll(); err != nil {
		t.Fatal(err)
	}
	create(t, r, sampleSession("s1"), time.Minute)
	if _, err := r.SigningKey(ctx, "jwt"); err != nil {
		t.Fatal(err)
	}
	keys, err := srv.Client().Keys(ctx, "*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys = %q, %v; want the session and the signing key", keys, err)
	}
	for _, k := range keys {
		if d, _ := pttl(t, r, k); d <= 0 {
			t.Errorf("key %q has PTTL %v, want a TTL", k, d)
		}
	}
}

func TestStore_LoadSessionIsOneRoundTripTwoCommands(t *testing.T) {
	r := newRedis(t)
	create(t, r, sampleSession("s1"), time.Minute)
	load(t, r, "s1") // warm up: new connections send handshake commands
	before := commandCalls(t)
	load(t, r, "s1")
	after := commandCalls(t)
	n := after - before
	t.Logf("LoadSession ran %d commands", n)
	if n < 1 || n > 2 {
		t.Errorf("LoadSession ran %d commands, want at most 2", n)
	}
}

// commandCalls totals INFO commandstats calls, minus INFO itself.
func commandCalls(t *testing.T) int {
	t.Helper()
	info, err := srv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" {
			continue
		}
		n, err := strconv.Atoi(stats[:strings.IndexByte(stats, ',')])
		if err != nil {
			t.Fatalf("bad commandstats line %q", line)
		}
		total += n
	}
	return total
}
