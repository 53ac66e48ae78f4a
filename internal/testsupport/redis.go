// Package testsupport is what the repository's tests share: real
// dependencies (redis-server, go-sdk backends, gateway processes), the
// hand-written MCP client (Client), and the one polling helper
// (Eventually). A real redis-server (rather than a fake) is used so tests
// exercise the exact command semantics, Lua scripting, expiry and INFO
// statistics that production sees.
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
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server child process listening on loopback.
type RedisServer struct {
	// Addr is the server's host:port.
	Addr string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	dir    string
	client *redis.Client
	once   sync.Once
}

// redisReadyTimeout bounds how long StartRedis waits for the first PONG.
const redisReadyTimeout = 10 * time.Second

// MustStartRedis is StartRedis for TestMain: it panics, with a message
// saying what is missing, when the server cannot be started.
//
// Under -short (Short) it starts nothing and returns nil: the tests that
// need it skip (SkipShort), and Stop on nil does nothing.
func MustStartRedis() *RedisServer {
	if Short() {
		return nil
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		panic("testsupport: redis-server is not installed (not found in PATH); " +
			"install it (e.g. apt-get install redis-server) to run these tests")
	}
	s, err := StartRedis()
	if err != nil {
		panic(err)
	}
	return s
}

// StartRedis starts redis-server on a free loopback port with persistence
// off and a private temp dir, and returns once it answers PING.
func StartRedis() (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("testsupport: redis-server not found: %w", err)
	}
	// The free port is only free until someone else takes it, so a server
	// that exits straight away (bind failure) is retried on a new port.
	for attempt := 1; ; attempt++ {
		s, err := startRedis(bin)
		if !errors.Is(err, errExited) || attempt == 3 {
			return s, err
		}
	}
}

// errExited means redis-server quit before it was ready, typically because
// another process took the port first.
var errExited = errors.New("process exited before answering PING")

func startRedis(bin string) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testsupport-redis-")
	if err != nil {
		return nil, fmt.Errorf("testsupport: %w", err)
	}
	logPath := filepath.Join(dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testsupport: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A test binary that panics never reaches the TestMain that stops
	// this server: the kernel stops it instead.
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testsupport: start redis-server: %w", err)
	}
	s := &RedisServer{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cmd:    cmd,
		exited: make(chan struct{}),
		dir:    dir,
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	s.client = redis.NewClient(&redis.Options{Addr: s.Addr})

	if err := s.waitReady(); err != nil {
		log, _ := os.ReadFile(logPath)
		s.Stop()
		return nil, fmt.Errorf("testsupport: redis-server on %s: %w; its log:\n%s", s.Addr, err, log)
	}
	return s, nil
}

// waitReady polls PING: redis-server gives no other readiness signal. It
// gives up early if the process has exited.
func (s *RedisServer) waitReady() error { return waitForPing(s.client, s.exited) }

// waitForPing polls client's PING until it answers, redisReadyTimeout
// passes, or exited is closed (the server died).
func waitForPing(client *redis.Client, exited <-chan struct{}) error {
	err := poll(redisReadyTimeout, exited, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return client.Ping(ctx).Err()
	})
	if err != nil && !errors.Is(err, errExited) {
		return fmt.Errorf("not ready after %v: %w", redisReadyTimeout, err)
	}
	return err
}

// URL is the server's redis:// URL.
func (s *RedisServer) URL() string {
	if s == nil {
		return "" // -short: no server; its users skip
	}
	return "redis://" + s.Addr
}

// Client returns a client shared by callers of this server, for inspecting
// and preparing state. Do not close it; Stop does.
// Nil under -short (no server).
func (s *RedisServer) Client() *redis.Client {
	if s == nil {
		return nil
	}
	return s.client
}

// FlushAll deletes every key on the server.
func (s *RedisServer) FlushAll() error {
	if err := s.client.FlushAll(context.Background()).Err(); err != nil {
		return fmt.Errorf("testsupport: flushall: %w", err)
	}
	return nil
}

// Stop kills the server, waits for it to exit and removes its temp dir.
// It is safe to call more than once.
func (s *RedisServer) Stop() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		_ = s.client.Close()
		_ = s.cmd.Process.Kill()
		<-s.exited
		_ = os.RemoveAll(s.dir)
	})
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testsupport: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
