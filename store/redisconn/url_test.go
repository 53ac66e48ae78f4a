package redisconn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/store/redisconn"
)

// fmtCfg summarises a parsed URL as "topology addrs tls db master user:pass".
func fmtCfg(c *redisconn.Config) string {
	switch c.Topology {
	case redisconn.Cluster:
		o := c.Cluster
		return fmt.Sprintf("cluster %v tls=%t skip=%t %s:%s", o.Addrs, o.TLSConfig != nil,
			o.TLSConfig != nil && o.TLSConfig.InsecureSkipVerify, o.Username, o.Password)
	case redisconn.Sentinel:
		o := c.Failover
		return fmt.Sprintf("sentinel %v tls=%t db=%d master=%s %s:%s sentinel=%s:%s", o.SentinelAddrs,
			o.TLSConfig != nil, o.DB, o.MasterName, o.Username, o.Password, o.SentinelUsername, o.SentinelPassword)
	default:
		o := c.Single
		return fmt.Sprintf("standalone %s tls=%t db=%d %s:%s", o.Addr, o.TLSConfig != nil, o.DB, o.Username, o.Password)
	}
}

func TestRedisURL_Forms(t *testing.T) {
	ok := map[string]string{
		"redis://127.0.0.1:6379": "standalone 127.0.0.1:6379 tls=false db=0 :",
		"redis://localhost":      "standalone localhost:6379 tls=false db=0 :",
		"REDIS://[::1]:7000/1":   "standalone [::1]:7000 tls=false db=1 :",
		"rediss://u:hun%40ter2@c.example:6380/2?dial_timeout=3s": "standalone c.example:6380 tls=true db=2 u:hun@ter2",
		"redis+cluster://:pw@n1:7000,n2:7001,n3":                 "cluster [n1:7000 n2:7001 n3:6379] tls=false skip=false :pw",
		"rediss+cluster://n1:7000?skip_verify=true":              "cluster [n1:7000] tls=true skip=true :",
		"redis+sentinel://:pw@s1,s2:26380/mymaster/3":            "sentinel [s1:26379 s2:26380] tls=false db=3 master=mymaster :pw sentinel=:",
		"rediss+sentinel://s1/m?sentinel_password=sp":            "sentinel [s1:26379] tls=true db=0 master=m : sentinel=:sp",
	}
	for raw, want := range ok {
		cfg, err := redisconn.ParseURL(raw)
		if err != nil {
			t.Errorf("ParseRedisURL(%q): %v", raw, err)
			continue
		}
		if got := fmtCfg(cfg); got != want {
			t.Errorf("ParseRedisURL(%q) = %s\nwant %s", raw, got, want)
		}
	}

	const secret = "hunter2"
	bad := []string{
		"http://:hunter2@h:1",
		"unix://:hunter2@/tmp/redis.sock",
		"hunter2@h:6379",
		"redis://",
		"redis://:hunter2@",
		"redis://:hunter2@/0",
		"redis+cluster://:hunter2@a:1,,b:2",
		"redis+sentinel://:hunter2@h:26379",
		"redis+sentinel://:hunter2@h/m/notadb",
		"redis://:hunter2@h:notaport",
		"redis://:hun?ter2@h:1",
		"redis://:hun%zzter2@h:1",
		"redis://:hunter2@a:1,b:2",
		"redis+cluster://:hunter2@h/3",
		"redis://:hunter2@h:1/0?bogus=hunter2",
		"redis://:hunter2@h:1/0?password=hunter2&x",
		"redis+sentinel://h/m?sentinel_password=hunter2&bogus=1",
		"redis://:hunter2@h:1/0?dial_timeout=hunter2",
	}
	for _, raw := range bad {
		_, err := redisconn.ParseURL(raw)
		if err == nil {
			t.Errorf("ParseRedisURL(%q) succeeded, want an error", raw)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, secret) || strings.Contains(msg, "hun") || !strings.HasPrefix(msg, "store: ") {
			t.Errorf("ParseRedisURL(%q) error %q leaks the password or lacks the store: prefix", raw, msg)
		}
	}
}

// The store speaks RESP2 unless the URL asks for RESP3 (protocol=3).
func TestRedisURL_ProtocolDefaultsToRESP2(t *testing.T) {
	protocol := func(c *redisconn.Config) int {
		switch c.Topology {
		case redisconn.Cluster:
			return c.Cluster.Protocol
		case redisconn.Sentinel:
			return c.Failover.Protocol
		default:
			return c.Single.Protocol
		}
	}
	for raw, want := range map[string]int{
		"redis://h:1":                      2,
		"redis+cluster://a:1,b:2":          2,
		"redis+sentinel://s1/m":            2,
		"redis://h:1?protocol=3":           3,
		"redis+cluster://a:1?protocol=3":   3,
		"redis+sentinel://s1/m?protocol=3": 3,
	} {
		cfg, err := redisconn.ParseURL(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got := protocol(cfg); got != want {
			t.Errorf("%s: protocol %d, want %d", raw, got, want)
		}
	}
}
