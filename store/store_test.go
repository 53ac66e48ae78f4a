package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/tests/testsupport"
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
	t.Cleanup(func() { r.Close() })
	return r
}

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

func sampleSession(id string) *store.Session {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	return &store.Session{
		ID: id, Principal: "alice", VHost: "mcp.example.com", ProtocolVersion: "2025-06-18",
		ClientInfo:         json.RawMessage(`{"name":"cli","version":"1.0"}`),
		ClientCapabilities: json.RawMessage(`{"roots":{"listChanged":true},"list":[]}`),
		LogLevel:           "info",
		CreatedAt:          at,
		Backends: map[string]*store.BackendSnapshot{
			"github": {Key: "github", ProbedAt: at, ProtocolVersion: "2025-06-18",
				Capabilities: json.RawMessage(`{"tools":{}}`), ServerInfo: json.RawMessage(`{"name":"gh"}`),
				Instructions: "be nice", SessionID: "up-1"},
			"down": {Key: "down", ProbedAt: at, Error: "connection refused", Stateless: true},
		},
		Subscriptions: []string{"file:///a", "gh://repo/b"},
		Cancelled:     map[string]bool{"41": true},
		Pending:       map[string]string{"gw-0": "0123456789abcdef"},
	}
}

func create(t *testing.T, s store.Store, sess *store.Session, ttl time.Duration) {
	t.Helper()
	if err := s.CreateSession(context.Background(), sess, ttl); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
}

func load(t *testing.T, s store.Store, id string) *store.Session {
	t.Helper()
	got, err := s.LoadSession(context.Background(), id, time.Hour)
	if err != nil {
		t.Fatalf("LoadSession(%q): %v", id, err)
	}
	return got
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

func TestStore_CreateLoadRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		want := sampleSession("s1")
		create(t, s, want, time.Minute)
		if got := load(t, s, "s1"); !reflect.DeepEqual(got, want) {
			t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
		}
	})
}

func TestStore_CallersCannotAliasStoredData(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		in := sampleSession("s1")
		create(t, s, in, time.Minute)
		in.ClientInfo[2] = 'X'
		in.Backends["github"].Capabilities[2] = 'X'
		in.Subscriptions[0] = "changed"
		in.Cancelled["42"] = true
		in.Pending["gw-0"] = "changed"

		out := load(t, s, "s1")
		out.ClientCapabilities[2] = 'X'
		out.Backends["github"].ServerInfo[2] = 'X'
		out.Backends["new"] = &store.BackendSnapshot{Key: "new"}
		out.Cancelled["43"] = true
		out.Pending["gw-1"] = "x"

		if got, want := load(t, s, "s1"), sampleSession("s1"); !reflect.DeepEqual(got, want) {
			t.Errorf("stored session changed through an alias:\n%+v\nwant\n%+v", got, want)
		}
	})
}

func TestStore_LoadRefreshesTTL(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), 250*time.Millisecond)
		load(t, s, "s1") // ttl: 1h
		if d, ok := pttl(t, s, store.SessionKey(testPrefix, "s1")); ok && d < 59*time.Minute {
			t.Errorf("PTTL after load = %v, want about 1h", d)
		}
		time.Sleep(350 * time.Millisecond) // past the creation TTL
		load(t, s, "s1")
	})
}

// writes are the conditional writes: each must refresh the TTL of an
// existing session and report ErrNotFound for an absent one.
var writes = map[string]func(s store.Store, id string) error{
	"PutBackends": func(s store.Store, id string) error {
		return s.PutBackends(context.Background(), id, []*store.BackendSnapshot{{Key: "x"}}, time.Hour)
	},
	"SetLogLevel": func(s store.Store, id string) error {
		return s.SetLogLevel(context.Background(), id, "debug", time.Hour)
	},
	"AddSubscription": func(s store.Store, id string) error {
		return s.AddSubscription(context.Background(), id, "u", time.Hour)
	},
	"RemoveSubscription": func(s store.Store, id string) error {
		return s.RemoveSubscription(context.Background(), id, "u", time.Hour)
	},
	"MarkCancelled": func(s store.Store, id string) error {
		msg := store.BusMessage{Kind: store.BusCancel, Session: id, ID: "9"}
		return s.MarkCancelled(context.Background(), id, "9", msg, time.Minute, time.Hour)
	},
	"AddPending": func(s store.Store, id string) error {
		return s.AddPending(context.Background(), id, "gw-9", s.InstanceID(), time.Hour)
	},
}

// childWrites create the session's other keys (event log, stream claim).
// They have TTLs of their own, but must not outlive or revive a session
// either: ErrNotFound, and nothing written, for an absent one.
var childWrites = map[string]func(s store.Store, id string) error{
	"AppendEvent": func(s store.Store, id string) error {
		_, err := s.AppendEvent(context.Background(), id, []byte(`{}`), 10, time.Hour)
		return err
	},
	"ClaimStream": func(s store.Store, id string) error {
		_, err := s.ClaimStream(context.Background(), id, "someone", time.Hour)
		return err
	},
}

func TestStore_WritesRefreshTTL(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		for name, write := range writes {
			create(t, s, sampleSession(name), 250*time.Millisecond)
			if err := write(s, name); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d, ok := pttl(t, s, store.SessionKey(testPrefix, name)); ok && d < 59*time.Minute {
				t.Errorf("PTTL after %s = %v, want about 1h", name, d)
			}
		}
		time.Sleep(350 * time.Millisecond) // past the creation TTL
		for name := range writes {
			load(t, s, name)
		}
	})
}

func TestStore_ExpiredSessionIsNotFound(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), 50*time.Millisecond)
		if d, ok := pttl(t, s, store.SessionKey(testPrefix, "s1")); ok && (d <= 0 || d > 50*time.Millisecond) {
			t.Errorf("PTTL = %v, want (0, 50ms]", d)
		}
		time.Sleep(100 * time.Millisecond) // no expiry signal to wait on
		assertGone(t, s, "s1")
		if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteSession: err = %v, want ErrNotFound", err)
		}
	})
}

func TestStore_PutBackendsDoesNotResurrectDeletedSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		if err := s.DeleteSession(context.Background(), "s1"); err != nil {
			t.Fatal(err)
		}
		assertGone(t, s, "s1")
		if _, ok := s.(*store.Redis); ok {
			if keys := sessionKeys(t, "s1"); len(keys) != 0 {
				t.Errorf("keys %q exist again after writes to a deleted session", keys)
			}
		}
	})
}

// assertGone checks that every read and write of id reports ErrNotFound,
// writes first so that a resurrecting write is caught by the final load.
func assertGone(t *testing.T, s store.Store, id string) {
	t.Helper()
	for op, write := range writes {
		if err := write(s, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", op, err)
		}
	}
	for op, write := range childWrites {
		if err := write(s, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", op, err)
		}
	}
	if evs, err := s.EventsAfter(context.Background(), id, "0-0", 0); err != nil || len(evs) != 0 {
		t.Errorf("EventsAfter = %v, %v; want no events", evs, err)
	}
	if _, err := s.LoadSession(context.Background(), id, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadSession: err = %v, want ErrNotFound", err)
	}
}

func TestStore_PutBackendsReplacesOnlyTheGivenBackends(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		want := sampleSession("s1")
		create(t, s, want, time.Minute)
		github := &store.BackendSnapshot{Key: "github", Error: "timeout", ProbedAt: want.CreatedAt.Add(time.Second)}
		extra := &store.BackendSnapshot{Key: "extra", Stateless: true, ProbedAt: want.CreatedAt}
		if err := s.PutBackends(context.Background(), "s1", []*store.BackendSnapshot{github, extra}, time.Minute); err != nil {
			t.Fatal(err)
		}
		want.Backends["github"], want.Backends["extra"] = github, extra
		if got := load(t, s, "s1"); !reflect.DeepEqual(got, want) {
			t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
		}
	})
}

func TestStore_SetLogLevelKeepsTheRestOfTheSession(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		want := sampleSession("s1")
		create(t, s, want, time.Minute)
		if err := s.SetLogLevel(context.Background(), "s1", "debug", time.Minute); err != nil {
			t.Fatal(err)
		}
		want.LogLevel = "debug"
		if got := load(t, s, "s1"); !reflect.DeepEqual(got, want) {
			t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
		}
	})
}

func TestStore_SubscriptionsRoundTrip(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		sess := sampleSession("s1")
		sess.Subscriptions = []string{"file:///a"}
		create(t, s, sess, time.Minute)
		steps := []error{
			s.AddSubscription(ctx, "s1", "b://x", time.Minute),
			s.AddSubscription(ctx, "s1", "b://x", time.Minute), // idempotent
			s.AddSubscription(ctx, "s1", "c://y:with:colons", time.Minute),
			s.RemoveSubscription(ctx, "s1", "file:///a", time.Minute),
			s.RemoveSubscription(ctx, "s1", "never-added", time.Minute),
		}
		for i, err := range steps {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		want := []string{"b://x", "c://y:with:colons"}
		if got := load(t, s, "s1").Subscriptions; !reflect.DeepEqual(got, want) {
			t.Errorf("subscriptions = %q, want %q", got, want)
		}
	})
}

func TestStore_DeleteRemovesEveryKey(t *testing.T) {
	ctx := context.Background()
	forEachStore(t, func(t *testing.T, s store.Store) {
		create(t, s, sampleSession("s1"), time.Minute)
		if err := s.SetLogLevel(ctx, "s1", "debug", time.Minute); err != nil {
			t.Fatal(err)
		}
		for op, write := range childWrites {
			if err := write(s, "s1"); err != nil {
				t.Fatalf("%s: %v", op, err)
			}
		}
		_, isRedis := s.(*store.Redis)
		if isRedis && len(sessionKeys(t, "s1")) != 3 {
			t.Fatalf("keys tagged {s1} before delete = %q, want session, events and stream", sessionKeys(t, "s1"))
		}
		if err := s.DeleteSession(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if isRedis {
			if keys := sessionKeys(t, "s1"); len(keys) != 0 {
				t.Errorf("keys left after delete: %q", keys)
			}
		}
		if _, err := s.LoadSession(ctx, "s1", time.Minute); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LoadSession after delete: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second DeleteSession: err = %v, want ErrNotFound", err)
		}
	})
}

// sessionKeys SCANs every node of target for the keys carrying session
// sid's hash tag.
func sessionKeys(t *testing.T, sid string) []string {
	t.Helper()
	var keys []string
	for _, byNode := range target.scan(t, "*{"+sid+"}*") {
		keys = append(keys, byNode...)
	}
	return keys
}

func TestStore_PingAndCloseTwice(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		if err := s.Ping(context.Background()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

func TestStore_RejectsTTLBelowOneMillisecond(t *testing.T) {
	forEachStore(t, func(t *testing.T, s store.Store) {
		if err := s.CreateSession(context.Background(), sampleSession("s1"), 0); err == nil {
			t.Error("CreateSession with ttl 0 succeeded")
		}
	})
}
