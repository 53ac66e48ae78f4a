package redisconn

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Unusable reports whether err, from Ping, says that the store can never
// work as configured, so that waiting for it is pointless: the server
// refused the credentials (or wants some and got none), the database index
// does not exist, or the host name does not resolve. cmd/gateway stops
// start-up on such an error. Anything else (a refused connection, a
// timeout, a server still loading its data) may be Redis starting up, and
// is waited out behind /readyz.
func Unusable(err error) bool {
	if err == nil {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return true
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	for _, prefix := range []string{"NOAUTH", "WRONGPASS", "NOPERM"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	// "ERR DB index is out of range" (older servers: "ERR invalid DB index").
	return strings.HasPrefix(msg, "ERR") && strings.Contains(msg, "DB index")
}

// Hosts are the host names the configuration dials (the node, the
// cluster's seeds, or the sentinels), without ports; addresses that are
// IPs are left out: they need no lookup.
func (c *Config) Hosts() []string {
	var addrs []string
	switch c.Topology {
	case Cluster:
		addrs = c.Cluster.Addrs
	case Sentinel:
		addrs = c.Failover.SentinelAddrs
	default:
		addrs = []string{c.Single.Addr}
	}
	var hosts []string
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		if host != "" && net.ParseIP(host) == nil {
			hosts = append(hosts, host)
		}
	}
	return hosts
}

// LookupWithin is how long UnresolvedHosts waits for each lookup.
const LookupWithin = 2 * time.Second

// UnresolvedHosts returns a *net.DNSError (IsNotFound) when none of hosts
// resolves, nil otherwise (some resolve, there are none, or the resolver
// did not answer in time). Ping calls it when the server did not answer:
// a client that retries its dials can run out of time before it reports
// the lookup's failure, and the one cause that waiting cannot fix is then
// lost in a timeout.
func UnresolvedHosts(hosts []string) error {
	var notFound error
	for _, h := range hosts {
		ctx, cancel := context.WithTimeout(context.Background(), LookupWithin)
		_, err := net.DefaultResolver.LookupHost(ctx, h)
		cancel()
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
			return nil
		}
		notFound = err
	}
	return notFound
}
