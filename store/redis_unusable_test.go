package store_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/redisconn"
)

// A store URL that can never work is told apart from a Redis that is only
// not up yet: start-up stops on the first kind and waits out the second.
func TestUnusable_TellsPermanentFromPassingFailures(t *testing.T) {
	locked, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Stop()
	const password = "s3cret-for-unusable"
	if err := locked.Client().ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // nothing listens there now: connection refused

	cases := []struct {
		name     string
		url      string
		unusable bool
	}{
		{"no password where one is required", "redis://" + locked.Addr, true},
		{"wrong password", "redis://:wrong@" + locked.Addr, true},
		{"database index out of range", fmt.Sprintf("redis://:%s@%s/99", password, locked.Addr), true},
		{"unknown host", "redis://no-such-host.invalid:6379", true},
		{"connection refused: Redis may be starting", "redis://" + closedAddr, false},
		{"working", fmt.Sprintf("redis://:%s@%s/1", password, locked.Addr), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := store.NewRedis(tc.url, store.RedisOptions{Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			perr := rs.Ping(context.Background())
			if tc.name == "working" {
				if perr != nil {
					t.Fatalf("ping: %v", perr)
				}
				return
			}
			if perr == nil {
				t.Fatal("ping succeeded")
			}
			if got := redisconn.Unusable(perr); got != tc.unusable {
				t.Fatalf("Unusable(%v) = %v, want %v", perr, got, tc.unusable)
			}
			if strings.Contains(perr.Error(), password) || strings.Contains(perr.Error(), "wrong") {
				t.Fatalf("the error shows a password: %v", perr)
			}
		})
	}
}

// A URL redisconn refuses is refused by NewRedis, before any connection.
func TestNewRedis_RefusesABadURL(t *testing.T) {
	for _, raw := range []string{"redis://:hunter2@h:notaport", "redis+cluster://:hunter2@h/3", "http://h:1"} {
		if _, err := store.NewRedis(raw, store.RedisOptions{}); err == nil {
			t.Errorf("NewRedis(%q) succeeded, want an error", raw)
		}
	}
}

// A host name that does not resolve is reported as such even when the
// Ping's time runs out first (go-redis retries its dials, and on a loaded
// machine the lookup's failure came after the deadline): start-up still
// stops on it. A name that resolves, and a refused connection, are not.
func TestPing_UnresolvedHostOutlivesTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		url      string
		unusable bool
	}{
		{"redis://no-such-host.invalid:6379", true},
		{"redis+cluster://no-such-host.invalid:6379,also-not.invalid:6379", true},
		{"redis://localhost:1", false},
	} {
		rs, err := store.NewRedis(tc.url, store.RedisOptions{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		perr := rs.Ping(ctx)
		cancel()
		rs.Close()
		if perr == nil || redisconn.Unusable(perr) != tc.unusable {
			t.Errorf("%s: Ping = %v, Unusable %v, want %v", tc.url, perr, redisconn.Unusable(perr), tc.unusable)
		}
	}
}
