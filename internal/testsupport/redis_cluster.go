package testsupport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a three-node Redis Cluster (three primaries, no
// replicas) of redis-server child processes on loopback, so the store can
// be tested against the hash-slot rules production clusters enforce
// (CROSSSLOT errors for multi-key commands, scripts and transactions).
type RedisCluster struct {
	// Addrs are the nodes' host:port, in the order they were started.
	Addrs []string

	nodes  []*clusterNode
	dir    string
	client *redis.ClusterClient
	once   sync.Once
}

type clusterNode struct {
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	logPath string
	client  *redis.Client // this node only, for CLUSTER INFO
}

const (
	// clusterNodes is how many primaries the cluster has; three is the
	// minimum redis-cli --cluster create accepts.
	clusterNodes = 3
	// clusterReadyTimeout bounds the wait for cluster_state:ok on every
	// node after the slots were assigned: nodes learn about each other by
	// gossip, which has no completion signal but CLUSTER INFO.
	clusterReadyTimeout = 30 * time.Second
	// clusterCreateTimeout bounds redis-cli --cluster create.
	clusterCreateTimeout = 60 * time.Second
)

// StartRedisCluster starts three redis-server processes in cluster mode on
// free loopback ports (persistence off, one temp dir for all), joins them
// with `redis-cli --cluster create ... --cluster-replicas 0`, and returns
// once CLUSTER INFO reports cluster_state:ok and every node on every node.
//
// It needs redis-server 7.0 or later (the cluster bus port is chosen with
// --cluster-port rather than derived as port+10000) and redis-cli, which
// Debian and Ubuntu ship in the redis-tools package. Like StartRedis it
// takes no *testing.T, so a TestMain can start one cluster for a package;
// a missing binary is an error that says what to install.
func StartRedisCluster() (*RedisCluster, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("testsupport: redis-server is not installed (not found in PATH); " +
			"install it (e.g. apt-get install redis-server) to run the Redis Cluster tests")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, errors.New("testsupport: redis-cli is not installed (not found in PATH); it creates " +
			"the Redis Cluster: install it (Debian/Ubuntu: apt-get install redis-tools) to run the Redis Cluster tests")
	}
	// Free ports are only free until someone takes them: a node that exits
	// straight away (bind failure) makes the whole start retry on new ports.
	for attempt := 1; ; attempt++ {
		c, err := startRedisCluster(server, cli)
		if !errors.Is(err, errExited) || attempt == 3 {
			return c, err
		}
	}
}

func startRedisCluster(server, cli string) (c *RedisCluster, err error) {
	dir, err := os.MkdirTemp("", "testsupport-redis-cluster-")
	if err != nil {
		return nil, fmt.Errorf("testsupport: %w", err)
	}
	c = &RedisCluster{dir: dir}
	defer func() {
		if err != nil {
			err = fmt.Errorf("testsupport: redis cluster: %w%s", err, c.logs())
			c.Stop()
			c = nil
		}
	}()

	for i := range clusterNodes {
		n, err := startClusterNode(server, dir, i)
		if err != nil {
			return c, err
		}
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.addr)
	}
	for _, n := range c.nodes {
		if err := n.waitPing(); err != nil {
			return c, err
		}
	}

	// redis-cli assigns the 16384 slots over the primaries and makes the
	// nodes meet; --cluster-yes accepts the proposed layout.
	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	create := exec.CommandContext(ctx, cli, args...)
	if out, err := create.CombinedOutput(); err != nil {
		return c, fmt.Errorf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	if err := c.waitClusterOK(); err != nil {
		return c, err
	}
	c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	return c, nil
}

func startClusterNode(server, dir string, i int) (*clusterNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	busPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if busPort == port { // both were free a moment ago: retry on new ports
		return nil, fmt.Errorf("node %d: port and bus port coincide: %w", i, errExited)
	}
	n := &clusterNode{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		exited:  make(chan struct{}),
		logPath: filepath.Join(dir, "redis-"+strconv.Itoa(i)+".log"),
	}
	logFile, err := os.Create(n.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child keeps its own descriptor

	n.cmd = exec.Command(server,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-config-file", filepath.Join(dir, "nodes-"+strconv.Itoa(i)+".conf"),
		"--save", "", "--appendonly", "no", "--dir", dir)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	dieWithParent(n.cmd)
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	n.client = redis.NewClient(&redis.Options{Addr: n.addr})
	return n, nil
}

// waitPing polls PING: redis-server gives no other readiness signal.
func (n *clusterNode) waitPing() error {
	return n.poll(redisReadyTimeout, func(ctx context.Context) error {
		return n.client.Ping(ctx).Err()
	})
}

// waitClusterOK polls CLUSTER INFO on every node until each reports
// cluster_state:ok and knows every node.
func (c *RedisCluster) waitClusterOK() error {
	want := "cluster_known_nodes:" + strconv.Itoa(clusterNodes)
	for _, n := range c.nodes {
		err := n.poll(clusterReadyTimeout, func(ctx context.Context) error {
			info, err := n.client.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				return fmt.Errorf("CLUSTER INFO on %s:\n%s", n.addr, strings.TrimSpace(info))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// poll runs check (with a second to answer) until it succeeds, timeout
// passes, or the node's process exits: the test support's one polling
// loop, with the node named in the error.
func (n *clusterNode) poll(timeout time.Duration, check func(context.Context) error) error {
	err := poll(timeout, n.exited, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return check(ctx)
	})
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("node %s: %w", n.addr, err)
	case err != nil:
		return fmt.Errorf("node %s not ready after %v: %w", n.addr, timeout, err)
	}
	return nil
}

// logs returns every node's log, for error messages.
func (c *RedisCluster) logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		data, _ := os.ReadFile(n.logPath)
		fmt.Fprintf(&b, "\nlog of node %s:\n%s", n.addr, data)
	}
	return b.String()
}

// URL is the cluster's redis+cluster:// URL with every node as a seed.
func (c *RedisCluster) URL() string {
	return "redis+cluster://" + strings.Join(c.Addrs, ",")
}

// Client returns a cluster client shared by callers, for inspecting and
// preparing state. Do not close it; Stop does.
func (c *RedisCluster) Client() *redis.ClusterClient { return c.client }

// Nodes returns one plain client per node, in Addrs order, for commands
// that must reach every node (SCAN, INFO, FLUSHALL) without the cluster
// client's own topology queries. Every node is a primary. Do not close
// them; Stop does.
func (c *RedisCluster) Nodes() []*redis.Client {
	out := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.client
	}
	return out
}

// FlushAll deletes every key on every node.
func (c *RedisCluster) FlushAll() error {
	for _, n := range c.nodes {
		if err := n.client.FlushAll(context.Background()).Err(); err != nil {
			return fmt.Errorf("testsupport: flushall on %s: %w", n.addr, err)
		}
	}
	return nil
}

// Stop kills every node, waits for them to exit and removes the temp dir.
// It is safe to call more than once.
func (c *RedisCluster) Stop() {
	c.once.Do(func() {
		if c.client != nil {
			_ = c.client.Close()
		}
		for _, n := range c.nodes {
			_ = n.client.Close()
			_ = n.cmd.Process.Kill()
		}
		for _, n := range c.nodes {
			<-n.exited
		}
		_ = os.RemoveAll(c.dir)
	})
}
