package testsupport

import (
	"flag"
	"testing"
)

// make test-short runs `go test -short ./...`: the unit tests alone, with
// no process started (no redis-server, no gateway binary, no Node, no
// stdio backend), in well under a minute. A TestMain asks Short before it
// starts a shared server; a test or helper that needs a process calls
// SkipShort first.

// Short reports whether the tests run with -short. It parses the flags
// if the TestMain calling it has not yet (m.Run parses them too; parsing
// twice is harmless).
func Short() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

// SkipShort skips t under -short: it needs a process.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes: not part of make test-short")
	}
}
