package router

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
)

// The router tells each stdio backend's pool which vhost it serves, so
// its log lines name it: the same backend key under two vhosts is two
// pools, and an operator must tell their lines apart. A command that
// cannot start makes the pool log at once, with no process to build.
func TestStdio_PoolLogLinesNameTheirVHost(t *testing.T) {
	var out testsupport.SyncBuffer
	missing := filepath.Join(t.TempDir(), "no-such-server")
	backends := func() map[string]*Backend {
		return map[string]*Backend{"files": {Config: upstream.Config{Key: "files", Transport: upstream.TransportStdio, Timeout: 5 * time.Second,
			Stdio: &upstream.StdioConfig{Command: missing, Pool: upstream.PoolConfig{Min: 1, Max: 1, Idle: time.Minute}}}}}
	}
	st := store.NewMemory()
	defer st.Close()
	r := New(map[string]*VirtualHost{"alpha": {Name: "alpha", Backends: backends()}, "beta": {Name: "beta", Backends: backends()}},
		Options{Store: st, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	defer r.Close()
	for _, vh := range []string{"alpha", "beta"} {
		want := "vhost=" + vh + " backend=files"
		if !testsupport.Eventually(t, failsafeWait, func() bool {
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.Contains(line, "stdio backend process failed to start") && strings.Contains(line, want) {
					return true
				}
			}
			return false
		}) {
			t.Errorf("no failed start logged with %q:\n%s", want, out.String())
		}
	}
}
