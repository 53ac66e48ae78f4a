package redisconn

import (
	"errors"
	"net"
	"strings"

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
