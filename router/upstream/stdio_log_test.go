//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// lockedBuffer is a log destination the pool's goroutines share.
type lockedBuffer struct{ testsupport.SyncBuffer }

// records decodes the JSON lines written so far.
func (l *lockedBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// An operator running one command as a backend of several virtual hosts
// must tell their processes apart: every log line of a stdio backend
// (its stderr, its start, its exit or crash, a failed start) names the
// vhost beside the backend, and the pid when there is a process.
func TestStdio_LogLinesNameTheVHost(t *testing.T) {
	var out lockedBuffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := stdioConfig(t, PoolConfig{Max: 1})
	cfg.Stdio.VHost = "demo"
	c := New(cfg, WithLogger(log))
	conn := open(t, c, Handshake{})
	if _, err := conn.Call(context.Background(), "tools/call", toolCall(t, "stderr", map[string]any{"lines": 1}, nil), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Call(context.Background(), "tools/call", toolCall(t, "crash", nil, nil), nil); err == nil {
		t.Fatal("the crash call succeeded")
	}
	conn.Close(false)
	c.Close() // waits for every process and its stderr: all their lines are written

	bad := stdioConfig(t, PoolConfig{Min: 1, Max: 1})
	bad.Stdio.VHost = "demo"
	bad.Stdio.Command = filepath.Join(t.TempDir(), "no-such-server")
	failing := New(bad, WithLogger(log))
	defer failing.Close()
	failed := func() bool {
		for _, r := range out.records(t) {
			if r["msg"] == "stdio backend process failed to start" {
				return true
			}
		}
		return false
	}
	if !testsupport.Eventually(t, failsafe, failed) {
		t.Fatal("no log line for the start that failed")
	}

	seen := map[string]bool{}
	for _, r := range out.records(t) {
		msg, _ := r["msg"].(string)
		if !strings.HasPrefix(msg, "stdio backend") {
			continue
		}
		seen[msg] = true
		if r["vhost"] != "demo" || r["backend"] != testKey {
			t.Errorf("%q: vhost %v, backend %v; want demo and %s", msg, r["vhost"], r["backend"], testKey)
		}
		if _, ok := r["pid"]; !ok && msg != "stdio backend process failed to start" {
			t.Errorf("%q names no pid: %v", msg, r)
		}
	}
	for _, msg := range []string{"stdio backend process started", "stdio backend stderr", "stdio backend process exited", "stdio backend process failed to start"} {
		if !seen[msg] {
			t.Errorf("no %q line among %v", msg, seen)
		}
	}
}
