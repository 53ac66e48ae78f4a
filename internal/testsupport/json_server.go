package testsupport

// json-server (npm, installed into .cache/interop by
// scripts/npm-fixtures.sh) is a real CRUD REST API over a JSON data file:
// the server behind the OpenAPI backend tests (issue 43). It lives here,
// not in tests/, so that packages other than tests/ (cmd/lambda) can put a
// REST API behind a gateway they run in process; what the API received is
// read back from its data file or from the API itself.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// jsonServerStart bounds json-server's start: Node reads its modules
// from disk, slowly on a busy machine.
const jsonServerStart = 60 * time.Second

// InteropNode returns the Node binary of .cache/interop and the directory
// of the npm package pkg there (or of a file inside it). Missing, the test
// is skipped, saying how to install them; on CI (CI set) it fails.
func InteropNode(t testing.TB, pkg string) (node, dir string) {
	t.Helper()
	root := repoRoot(t)
	modules := filepath.Join(root, ".cache", "interop", "node_modules")
	node, dir = filepath.Join(modules, "node", "bin", "node"), filepath.Join(modules, pkg)
	for _, p := range []string{node, dir} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing: .ci/run must run scripts/npm-fixtures.sh", p)
			}
			t.Skipf("%s is missing: run scripts/npm-fixtures.sh (make test does)", p)
		}
	}
	return node, dir
}

// repoRoot is the directory holding go.mod, found upwards from the
// package directory go test runs in.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testsupport: no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartJSONServer serves the data file db with json-server until the test
// ends and returns its base URL once it answers ("Home" printed).
func StartJSONServer(t testing.TB, db string) string {
	SkipShort(t)
	t.Helper()
	node, dir := InteropNode(t, "json-server")
	port := FreePort(t)
	cmd := exec.Command(node, filepath.Join(dir, "lib", "cli", "bin.js"), db, "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	dieWithParent(cmd)
	out := &markerWriter{marker: "Home", seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("testsupport: start json-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("json-server output:\n%s", out.buf.String())
		}
	})
	timer := time.NewTimer(jsonServerStart)
	defer timer.Stop()
	select {
	case <-out.seen:
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	case <-exited:
		t.Fatalf("testsupport: json-server exited before serving:\n%s", out.buf.String())
	case <-timer.C:
		t.Fatalf("testsupport: json-server did not start in %v:\n%s", jsonServerStart, out.buf.String())
	}
	return ""
}

// markerWriter keeps a process's output and closes seen once it contains
// marker. exec calls Write from one goroutine at a time when stdout and
// stderr are the same writer.
type markerWriter struct {
	buf    SyncBuffer
	marker string
	seen   chan struct{}
	once   sync.Once
}

func (w *markerWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}
