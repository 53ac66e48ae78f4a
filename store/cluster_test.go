package store_test

// The store on Redis Cluster. The contract suite (every forEachStore test)
// runs on a local three-node cluster as its "cluster" subtest; this file
// holds what selects the Redis deployment a test talks to, and the
// cluster-only assertions: every key of a session in one hash slot.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

// redisTarget is a Redis deployment the tests run stores on and inspect.
type redisTarget struct {
	url string
	// admin runs key-routed inspection commands (PTTL, XLEN, ...).
	admin redis.Cmdable
	// nodes reach every primary, for SCAN, INFO and FLUSHALL.
	nodes []*redis.Client
	// cluster is the cluster client on a cluster target, nil otherwise.
	cluster *redis.ClusterClient
}

// target is the deployment of the running test: newRedis, pttl,
// sessionKeys and commandCalls use it. Tests do not run in parallel; it is
// the single server except inside useTarget/useCluster.
var target *redisTarget

func singleTarget() *redisTarget {
	return &redisTarget{url: srv.URL(), admin: srv.Client(), nodes: []*redis.Client{srv.Client()}}
}

// useTarget makes tg the target for the rest of t, emptied first.
func useTarget(t *testing.T, tg *redisTarget) {
	t.Helper()
	prev := target
	target = tg
	t.Cleanup(func() { target = prev })
	tg.flush(t)
}

// useCluster makes the Redis Cluster the target for the rest of t, or
// fails t with the reason the cluster could not start (for instance a
// missing redis-cli).
func useCluster(t *testing.T) {
	t.Helper()
	if cluster == nil {
		t.Fatalf("the Redis Cluster for the store suite did not start: %v", clusterErr)
	}
	useTarget(t, &redisTarget{url: cluster.URL(), admin: cluster.Client(), nodes: cluster.Nodes(), cluster: cluster.Client()})
}

// flush deletes every key on every node.
func (tg *redisTarget) flush(t *testing.T) {
	t.Helper()
	for _, n := range tg.nodes {
		if err := n.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// scan returns the keys matching pattern on each node, in nodes order.
func (tg *redisTarget) scan(t *testing.T, pattern string) [][]string {
	t.Helper()
	ctx := context.Background()
	out := make([][]string, len(tg.nodes))
	for i, n := range tg.nodes {
		iter := n.Scan(ctx, 0, pattern, 100).Iterator()
		for iter.Next(ctx) {
			out[i] = append(out[i], iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestCluster_Started(t *testing.T) {
	useCluster(t)
	for i, n := range target.nodes {
		info, err := n.ClusterInfo(t.Context()).Result()
		if err != nil {
			t.Fatalf("CLUSTER INFO on node %d: %v", i, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			t.Errorf("CLUSTER INFO on node %s:\n%s", cluster.Addrs[i], info)
		}
	}
	if s, err := store.NewRedis(target.url, store.RedisOptions{}); err != nil {
		t.Fatal(err)
	} else {
		defer s.Close()
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("Ping through %s: %v", target.url, err)
		}
	}
}

// Every key of one session lands in the slot of its {sid} hash tag, on
// one node, so the store's scripts and MULTI blocks never span slots; and
// different sessions spread over the nodes, so the cluster really is
// sharded under the test.
func TestCluster_SessionKeysShareOneSlot(t *testing.T) {
	useCluster(t)
	ctx := t.Context()
	s := newRedis(t)
	if _, err := s.SigningKey(ctx, "cursor", nil); err != nil { // a non-session key, for contrast
		t.Fatal(err)
	}
	nodesUsed := map[int]bool{}
	for i := range 12 {
		sid := store.SessionID(fmt.Sprintf("session-%02d", i))
		sess := storetest.SampleSession(sid)
		storetest.Create(t, s, sess, time.Minute)
		for op, write := range childWrites {
			if err := write(s, sid); err != nil {
				t.Fatalf("%s(%s): %v", op, sid, err)
			}
		}
		// Touch the hash fields that other operations write, too.
		msg := store.BusMessage{Kind: store.BusCancel, Session: sid, ID: "7"}
		if err := s.MarkCancelled(ctx, sid, "7", msg, time.Minute, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.AddPending(ctx, sid, "gw-7", s.InstanceID(), time.Minute); err != nil {
			t.Fatal(err)
		}

		want := []string{store.SessionKey(testPrefix, sid), store.EventsKey(testPrefix, sid), store.StreamKey(testPrefix, sid)}
		slices.Sort(want)
		var found []string
		holders := 0
		for n, keys := range target.scan(t, "*{"+string(sid)+"}*") {
			if len(keys) > 0 {
				holders++
				nodesUsed[n] = true
			}
			found = append(found, keys...)
		}
		slices.Sort(found)
		if !slices.Equal(found, want) {
			t.Fatalf("keys of %s = %q, want %q", sid, found, want)
		}
		if holders != 1 {
			t.Errorf("keys of %s are spread over %d nodes, want 1", sid, holders)
		}
		tagSlot, err := target.cluster.ClusterKeySlot(ctx, string(sid)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range found {
			slot, err := target.cluster.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slot != tagSlot {
				t.Errorf("CLUSTER KEYSLOT %s = %d, want %d (the slot of the hash tag {%s})", k, slot, tagSlot, sid)
			}
		}
		// And the session is whole when read back through the cluster.
		got := storetest.Load(t, s, sid)
		if !got.Cancelled["7"] || got.Pending["gw-7"] != s.InstanceID() {
			t.Errorf("session %s read back without its marks: %v, %v", sid, got.Cancelled, got.Pending)
		}
		if err := s.DeleteSession(ctx, sid); err != nil {
			t.Fatal(err)
		}
		if keys := sessionKeys(t, sid); len(keys) != 0 {
			t.Errorf("keys of %s left after delete: %q", sid, keys)
		}
	}
	if len(nodesUsed) < 2 {
		t.Errorf("12 sessions all landed on one node of %d: the cluster is not sharding", len(target.nodes))
	}
}

// The single-server checks that hold on the cluster too.
func TestCluster_EveryKeyHasTTL(t *testing.T) {
	useCluster(t)
	everyKeyHasTTL(t)
}

func TestCluster_LoadSessionIsOneRoundTripTwoCommands(t *testing.T) {
	useCluster(t)
	loadSessionIsOneRoundTrip(t)
}
