package store_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
	"go.uber.org/goleak"
)

// testPrefix is the key prefix of every Redis store under test.
const testPrefix = "mcpgwtest"

// srv is one redis-server shared by all tests; tests do not run in
// parallel, and each Redis subtest starts from an empty server.
var srv *testsupport.RedisServer

// cluster is a three-node Redis Cluster shared the same way, or nil with
// clusterErr saying why it could not start (see cluster_test.go).
var (
	cluster    *testsupport.RedisCluster
	clusterErr error
)

func TestMain(m *testing.M) {
	if testsupport.Short() {
		fmt.Println("skipped under -short: the store contract runs on Redis servers it starts")
		os.Exit(0)
	}
	srv = testsupport.MustStartRedis()
	// A cluster that cannot start fails the tests that need it, with the
	// reason, rather than every test of the package.
	cluster, clusterErr = testsupport.StartRedisCluster()
	target = singleTarget()
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	srv.Stop()
	// Every store a test opened has been closed by now: whatever of it
	// still runs has leaked (goleak waits, bounded, for what is exiting).
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left running after the store tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newRedis returns a store on the Redis deployment of the running test
// (target): the single server unless forEachStore's cluster subtest or
// useCluster chose the cluster.
func newRedis(t *testing.T) *store.Redis {
	t.Helper()
	r, err := store.NewRedis(target.url, store.RedisOptions{KeyPrefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		closedInstances.Store(r.InstanceID(), true)
		r.Close()
	})
	return r
}

// closedInstances are the instance ids of the Redis stores earlier tests
// closed. A message one of them published can still reach a later test's
// subscriber (on a Redis Cluster a PUBLISH reaches the other nodes
// through the cluster bus, after the publisher's test has ended), so
// collect drops it: it belongs to no test running.
var closedInstances sync.Map

// forEachStore runs the same contract test against the memory store, the
// Redis store on one server, and the Redis store on a Redis Cluster.
// Redis-specific assertions type-assert the store to *store.Redis and
// inspect it through target.
func forEachStore(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Run("memory", func(t *testing.T) {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		fn(t, m)
	})
	t.Run("redis", func(t *testing.T) {
		useTarget(t, singleTarget())
		fn(t, newRedis(t))
	})
	t.Run("cluster", func(t *testing.T) {
		useCluster(t)
		fn(t, newRedis(t))
	})
}

// pttl returns the remaining TTL of key, or false for the memory store.
func pttl(t *testing.T, s store.Store, key string) (time.Duration, bool) {
	t.Helper()
	if _, ok := s.(*store.Redis); !ok {
		return 0, false
	}
	d, err := target.admin.PTTL(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

// childWrites create the session's other keys (event log, stream claim).
// They have TTLs of their own, but must not outlive or revive a session
// either: ErrNotFound, and nothing written, for an absent one.
var childWrites = map[string]func(s store.Store, id store.SessionID) error{
	"AppendEvent": func(s store.Store, id store.SessionID) error {
		_, err := s.AppendEvent(context.Background(), id, []byte(`{}`), 10, time.Hour)
		return err
	},
	"ClaimStream": func(s store.Store, id store.SessionID) error {
		_, err := s.ClaimStream(context.Background(), id, "someone", time.Hour)
		return err
	},
}

// ttlClock is the session waitTTL keeps its clock in.
const ttlClock store.SessionID = "ttl-clock"

// waitTTL returns once a TTL of ttl, starting now, has run out in s, so a
// test can check what a TTL it set earlier has done (or, refreshed, has
// not) without a fixed sleep. Expiry sends no signal, so the clock is a TTL
// of the store's own: an event log that lives ttl (on a session of its
// own), whose end LatestEventID shows without touching it; polling that,
// bounded, takes as long as the store takes and no longer. The clock
// starts after whatever the test set, with the same length, so when it
// has run out theirs has too, on the store's own clock (Redis' for Redis).
func waitTTL(t *testing.T, s store.Store, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	storetest.Create(t, s, &store.Session{ID: ttlClock}, time.Minute)
	if _, err := s.AppendEvent(ctx, ttlClock, []byte("tick"), 1, ttl); err != nil {
		t.Fatalf("starting the TTL clock: %v", err)
	}
	var id store.EventID
	var err error
	if !testsupport.Eventually(t, ttl+busWait, func() bool {
		id, err = s.LatestEventID(ctx, ttlClock)
		return err == nil && id == "0-0"
	}) {
		t.Fatalf("a TTL of %v has not run out after %v: the clock's log still ends at %q (%v)", ttl, ttl+busWait, id, err)
	}
	if err := s.DeleteSession(ctx, ttlClock); err != nil {
		t.Fatalf("stopping the TTL clock: %v", err)
	}
}

// sessionKeys SCANs every node of target for the keys carrying session
// sid's hash tag.
func sessionKeys(t *testing.T, sid store.SessionID) []string {
	t.Helper()
	var keys []string
	for _, byNode := range target.scan(t, "*{"+string(sid)+"}*") {
		keys = append(keys, byNode...)
	}
	return keys
}
