package router

import (
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"go.uber.org/goleak"
)

// A stdio backend's processes are an instance's warm state: a reload that
// leaves the backend's config as it was keeps its pool (no restart of
// every program on each reload), one that changes it starts a new pool
// and stops the old one's processes; Close reaps them all.
func TestReload_KeepsTheProcessesOfAnUnchangedStdioBackend(t *testing.T) {
	before := goleak.IgnoreCurrent()
	server := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/tests/cmd/stdio-everything")
	vhosts := func(max int) map[string]*VirtualHost {
		return map[string]*VirtualHost{"demo": {Name: "demo", Backends: map[string]*Backend{
			"files": {Config: upstream.Config{Key: "files", Transport: upstream.TransportStdio, Timeout: 5 * time.Second,
				Stdio: &upstream.StdioConfig{Command: server, Pool: upstream.PoolConfig{Min: 1, Max: max, Idle: time.Minute}}}},
		}}}
	}
	st := store.NewMemory()
	r := New(vhosts(2), Options{Store: st})
	client := func() *upstream.Client { return r.table.Load().vhosts["demo"].clients["files"] }
	first := client()
	if !testsupport.Eventually(t, failsafeWait, func() bool { return first.Stats().Idle == 1 }) {
		t.Fatalf("pool %+v: min 1 not started", first.Stats())
	}

	r.Reload(vhosts(2))
	if client() != first {
		t.Error("a reload with the same stdio config replaced the backend's pool")
	}
	r.Reload(vhosts(3))
	second := client()
	if second == first {
		t.Fatal("a reload with a new pool config kept the old pool")
	}
	if !testsupport.Eventually(t, failsafeWait, func() bool { return first.Stats().Running == 0 && second.Stats().Idle == 1 }) {
		t.Errorf("old pool %+v, new pool %+v: want the old one stopped, the new one started", first.Stats(), second.Stats())
	}
	r.Close()
	st.Close()
	if s := second.Stats(); s.Running != 0 {
		t.Errorf("after Close: %+v, want every process reaped", s)
	}
	goleak.VerifyNone(t, before)
}

const failsafeWait = 15 * time.Second
