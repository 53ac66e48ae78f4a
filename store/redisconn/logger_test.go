package redisconn

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// One failure that go-redis repeats for every connection is logged once per
// interval, with the count of lines held back, as JSON through slog, and
// without the URL's password.
func TestRedisLogger_RateLimitsEachKindAndHidesThePassword(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogger(slog.New(slog.NewJSONHandler(&buf, nil)), "redis://user:hunter2@redis:6379", 10*time.Second)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	ctx := context.Background()
	const dial = "redis: connection pool: failed to dial after %d attempts: %v"
	for range 20 { // a second's worth of retries
		l.Printf(ctx, dial, 5, "dial tcp redis:6379 (user:hunter2): connection refused")
		now = now.Add(50 * time.Millisecond)
	}
	l.Printf(ctx, "sentinel: new master=%q addr=%q", "mymaster", "10.0.0.1:6379") // another kind passes
	now = now.Add(10 * time.Second)
	l.Printf(ctx, dial, 5, "dial tcp: connection refused")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines (first failure, the other kind, the failure again), got %d:\n%s", len(lines), buf.String())
	}
	var first, last map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil {
		t.Fatal(err)
	}
	if first["level"] != "WARN" || first["msg"] != "redis client" || first["repeats_held_back"] != nil {
		t.Fatalf("first line: %v", first)
	}
	if last["repeats_held_back"] != float64(19) {
		t.Fatalf("last line does not count the 19 held back: %v", last)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Fatalf("the password reached the log:\n%s", buf.String())
	}
}

// Below warn, go-redis's lines are dropped before any formatting.
func TestRedisLogger_RespectsTheLevel(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})), "", 0)
	l.Printf(context.Background(), "redis: %s", "x")
	if buf.Len() != 0 {
		t.Fatalf("logged at level error: %s", buf.String())
	}
}
