package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// The REST servers the OpenAPI backend tests run, unmodified, from npm
// (scripts/npm-fixtures.sh): Stoplight Prism mocking a description, and
// json-server keeping a data file. A recording proxy in front of each
// keeps what it received, so a test asserts the request the API got.

// startNodeServer runs a Node program until the test ends and returns
// once a line of its output contains ready.
func startNodeServer(t *testing.T, ready string, args ...string) {
	t.Helper()
	launchNodeServer(t, ready, args...)()
}

// launchNodeServer starts a Node program that runs until the test ends;
// the function it returns waits until a line of its output contains
// ready, so a test starts a gateway while Node reads a large description.
func launchNodeServer(t *testing.T, ready string, args ...string) (wait func()) {
	t.Helper()
	node, _ := interopNode(t, "json-server")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	up := make(chan struct{})
	var tail bytes.Buffer
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.OnceFunc(func() { close(up) })
		for sc.Scan() {
			mu.Lock()
			if tail.Len() < 16<<10 {
				tail.WriteString(sc.Text() + "\n")
			}
			mu.Unlock()
			if strings.Contains(sc.Text(), ready) {
				once()
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	return func() {
		t.Helper()
		select {
		case <-up:
		case <-time.After(120 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s did not start in 120s:\n%s", filepath.Base(args[0]), tail.String())
		}
	}
}

// launchPrism mocks a description with Prism: it returns the base URL at
// once, and the wait for Prism to answer.
func launchPrism(t *testing.T, spec string) (string, func()) {
	t.Helper()
	_, dir := interopNode(t, "@stoplight/prism-cli")
	port := testsupport.FreePort(t)
	wait := launchNodeServer(t, "Prism is listening", filepath.Join(dir, "dist", "index.js"), "mock", "-h", "127.0.0.1", "-p", fmt.Sprint(port), spec)
	return fmt.Sprintf("http://127.0.0.1:%d", port), wait
}

// startJSONServer serves a json-server data file and returns its base URL;
// extra are more of json-server's options (--delay ms: a slow API).
func startJSONServer(t *testing.T, db string, extra ...string) string {
	t.Helper()
	_, dir := interopNode(t, "json-server")
	port := testsupport.FreePort(t)
	args := append([]string{filepath.Join(dir, "lib", "cli", "bin.js"), db, "--host", "127.0.0.1", "--port", fmt.Sprint(port)}, extra...)
	startNodeServer(t, "Home", args...)
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// recorded is one request an API received.
type recorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   string
}

// recorder is a reverse proxy that keeps what passes through it.
// Aborted gets the path of each request whose caller went away before
// the API answered (buffered; a full channel drops it).
type recorder struct {
	URL     string
	Aborted chan string
	mu      sync.Mutex
	got     []recorded
}

func startRecorder(t *testing.T, target string) *recorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Aborted: make(chan string, 16)}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.got = append(rec.got, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), string(body)})
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			select {
			case rec.Aborted <- r.URL.Path:
			default:
			}
		}
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// last returns the last request whose path starts with prefix.
func (r *recorder) last(t *testing.T, prefix string) recorded {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.got) - 1; i >= 0; i-- {
		if strings.HasPrefix(r.got[i].Path, prefix) {
			return r.got[i]
		}
	}
	t.Fatalf("the API received no request for %s (got %v)", prefix, r.got)
	return recorded{}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}
