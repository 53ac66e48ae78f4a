package testsupport

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago. Prefer
// listening on "127.0.0.1:0" where the code under test allows it: the port
// can be taken by someone else before the caller binds it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testsupport: find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
