package store_test

// Redis-only assertions; the shared contract is in the role files
// (sessions_test.go, marks_test.go, ...).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
	"go.uber.org/goleak"
)

func TestRedis_EveryKeyHasTTL(t *testing.T) { everyKeyHasTTL(t) }

// everyKeyHasTTL runs against target; cluster_test.go runs it on the cluster.
func everyKeyHasTTL(t *testing.T) {
	ctx := context.Background()
	r := newRedis(t)
	target.flush(t)
	storetest.Create(t, r, storetest.SampleSession("s1"), time.Minute)
	if _, err := r.SigningKey(ctx, "jwt", nil); err != nil {
		t.Fatal(err)
	}
	for op, write := range childWrites {
		if err := write(r, "s1"); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	var keys []string
	for _, byNode := range target.scan(t, "*") {
		keys = append(keys, byNode...)
	}
	if len(keys) != 4 {
		t.Fatalf("keys = %q; want the session, its events and stream claim, and the signing key", keys)
	}
	for _, k := range keys {
		if d, _ := pttl(t, r, k); d <= 0 {
			t.Errorf("key %q has PTTL %v, want a TTL", k, d)
		}
	}
}

func TestRedis_LoadSessionIsOneRoundTripTwoCommands(t *testing.T) { loadSessionIsOneRoundTrip(t) }

// loadSessionIsOneRoundTrip runs against target; cluster_test.go runs it
// on the cluster.
func loadSessionIsOneRoundTrip(t *testing.T) {
	r := newRedis(t)
	storetest.Create(t, r, storetest.SampleSession("s1"), time.Minute)
	ctx := context.Background()
	msg := store.BusMessage{Kind: store.BusCancel, Session: "s1", ID: "5"}
	if err := r.MarkCancelled(ctx, "s1", "5", msg, time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.AddPending(ctx, "s1", "gw-5", r.InstanceID(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if s := storetest.Load(t, r, "s1"); !s.Cancelled["5"] || s.Pending["gw-5"] != r.InstanceID() {
		t.Fatalf("marks missing from the loaded session: %v, %v", s.Cancelled, s.Pending)
	}
	storetest.Load(t, r, "s1") // warm up: new connections send handshake commands
	before := commandCalls(t)
	storetest.Load(t, r, "s1")
	after := commandCalls(t)
	n := after - before
	t.Logf("LoadSession ran %d commands", n)
	if n < 1 || n > 2 {
		t.Errorf("LoadSession ran %d commands, want at most 2", n)
	}
}

// commandCalls totals INFO commandstats calls over every node of target,
// minus INFO itself and CLUSTER subcommands (a cluster client's topology
// queries, never a store operation).
func commandCalls(t *testing.T) int {
	t.Helper()
	total := 0
	for _, node := range target.nodes {
		info, err := node.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok || name == "cmdstat_info" || strings.HasPrefix(name, "cmdstat_cluster|") {
				continue
			}
			n, err := strconv.Atoi(stats[:strings.IndexByte(stats, ',')])
			if err != nil {
				t.Fatalf("bad commandstats line %q", line)
			}
			total += n
		}
	}
	return total
}

// A session written before marks expired holds c:<id> = "1" fields, as many
// as its client sent: the first new mark clears them out.
func TestRedis_CancelMarksFromBeforeExpiryAreDropped(t *testing.T) {
	ctx := context.Background()
	useTarget(t, singleTarget())
	s := newRedis(t)
	sess := storetest.SampleSession("s1")
	sess.Cancelled = nil
	storetest.Create(t, s, sess, time.Minute)
	key := store.SessionKey(testPrefix, "s1")
	legacy := make([]any, 0, 2*5000)
	for i := range 5000 {
		legacy = append(legacy, fmt.Sprintf("c:%d", i), "1")
	}
	if err := target.admin.HSet(ctx, key, legacy...).Err(); err != nil {
		t.Fatal(err)
	}
	if c := storetest.Load(t, s, "s1").Cancelled; c != nil {
		t.Errorf("old marks read as live: %d of them", len(c))
	}
	cancel(t, s, "s1", "new", time.Minute)
	if fields := hashFields(t, s, "s1"); countPrefix(fields, "c:") != 1 {
		t.Errorf("hash holds %d cancel mark fields after a new mark, want 1", countPrefix(fields, "c:"))
	}
}

func TestRedis_BusSkipsMalformedMessages(t *testing.T) {
	r := newRedis(t)
	got, _ := collect(t, r)
	for _, payload := range []string{"not json", `{"s":"no kind"}`, `[1,2]`, `{"k":1}`} {
		if err := srv.Client().Publish(context.Background(), store.BusChannel(testPrefix), payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Publish(t, r, store.BusMessage{Kind: store.BusNotify, Session: "s1"})
	if m := storetest.Recv(t, got); m.Kind != store.BusNotify || m.Session != "s1" || m.From != r.InstanceID() {
		t.Errorf("first delivered message = %+v, want the well-formed one", m)
	}
}

func TestRedis_SubscribeReturnsAfterConfirmation(t *testing.T) {
	r := newRedis(t)
	storetest.MustSubscribe(t, r, func(store.BusMessage) {})
	// No waiting: the server must already count the subscription.
	subs := srv.Client().PubSubNumSub(context.Background(), store.BusChannel(testPrefix)).Val()
	if n := subs[store.BusChannel(testPrefix)]; n != 1 {
		t.Errorf("subscribers right after Subscribe = %d, want 1", n)
	}
}

// Subscribes racing Close each return, and once Close has returned nothing
// of the bus is left running, whichever came first: the first Subscribe
// waits for Redis without the bus's lock, which Close must not miss.
func TestRedis_SubscribeRacingCloseLeavesNothingRunning(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for range 20 {
		r, err := store.NewRedis(target.url, store.RedisOptions{KeyPrefix: testPrefix})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _, _ = r.Subscribe(t.Context(), func(store.BusMessage) {}) })
		}
		wg.Go(func() { r.Close() })
		wg.Wait()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
