package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests run the real gateway binary, so that flag parsing,
// signal handling and graceful shutdown are covered as deployed, and so
// that several gateway instances can share one store like replicas do.

const (
	// readyMarker starts the line the gateway prints once it accepts
	// connections; waiting for it avoids polling a port.
	readyMarker = "mcpgw: listening on "
	// readyTimeout is generous because binaries are built with -race.
	readyTimeout = 20 * time.Second
	// stopTimeout bounds a graceful stop before it turns into a kill.
	stopTimeout = 30 * time.Second
)

// builds caches one binary per package path for the life of the test
// binary: building with -race takes seconds, starting it takes none.
var builds struct {
	mu    sync.Mutex
	dir   string
	byPkg map[string]*binaryBuild
}

type binaryBuild struct {
	once sync.Once
	path string
	err  error
}

// BuildBinary builds the main package pkg (an import path such as
// "github.com/mcpgw/gateway/cmd/gateway") with -race once per test binary
// and returns the path of the executable. Call Cleanup from TestMain after
// m.Run to remove the build directory.
func BuildBinary(t testing.TB, pkg string) string {
	SkipShort(t)
	t.Helper()
	builds.mu.Lock()
	if builds.byPkg == nil {
		builds.byPkg = make(map[string]*binaryBuild)
	}
	b := builds.byPkg[pkg]
	if b == nil {
		b = &binaryBuild{}
		builds.byPkg[pkg] = b
	}
	var err error
	if builds.dir == "" {
		builds.dir, err = os.MkdirTemp("", "testsupport-bin-")
	}
	dir, n := builds.dir, len(builds.byPkg)
	builds.mu.Unlock()
	if err != nil {
		t.Fatalf("testsupport: build dir: %v", err)
	}

	b.once.Do(func() {
		name := path.Base(pkg)
		if name == "." || name == "/" {
			name = "bin"
		}
		b.path = filepath.Join(dir, name+"-"+strconv.Itoa(n))
		cmd := exec.Command("go", "build", "-race", "-o", b.path, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build -race %s: %v\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("testsupport: %v", b.err)
	}
	return b.path
}

// Cleanup removes the binaries BuildBinary built. Later BuildBinary calls
// build again.
func Cleanup() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	builds.dir, builds.byPkg = "", nil
}

// GatewayProcess is a running gateway binary.
type GatewayProcess struct {
	// URL is the gateway's base URL, http://ADDR, as it announced it.
	URL string

	cmd     *exec.Cmd
	out     *SyncBuffer
	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // set before exited is closed
}

// StartGateway runs bin with args plus "--listen 127.0.0.1:0" and env added
// to the test's environment, and returns once the gateway has announced
// that it is listening. The process is killed when the test ends; if the
// test failed, its output is logged.
func StartGateway(t testing.TB, bin string, args []string, env []string) *GatewayProcess {
	t.Helper()
	return StartGatewayWithin(t, readyTimeout, bin, args, env)
}

// StartGatewayWithin is StartGateway for a gateway that may take up to
// timeout to listen (one whose config loads a large OpenAPI description,
// say, under the race detector).
func StartGatewayWithin(t testing.TB, timeout time.Duration, bin string, args []string, env []string) *GatewayProcess {
	SkipShort(t)
	t.Helper()
	out := &SyncBuffer{}
	ready := make(chan string, 1)
	var once sync.Once
	announce := func(url string) { once.Do(func() { ready <- url }) }
	cmd := exec.Command(bin, append(slices.Clone(args), "--listen", "127.0.0.1:0")...)
	dieWithParent(cmd)
	cmd.Env = append(os.Environ(), env...)
	// The line is expected on stdout, but stderr is watched as well since
	// that is where the log package writes by default.
	cmd.Stdout = &readyWatcher{out: out, announce: announce}
	cmd.Stderr = &readyWatcher{out: out, announce: announce}
	// A grandchild holding the output pipes must not make Wait hang.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("testsupport: start %s: %v", bin, err)
	}
	p := &GatewayProcess{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(bin), p.Output())
		}
	})

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case p.URL = <-ready:
		return p
	case <-p.exited:
		t.Fatalf("testsupport: %s exited before listening (%v):\n%s", bin, p.waitErr, p.Output())
	case <-timer.C:
		p.Kill()
		t.Fatalf("testsupport: %s did not print %q within %v:\n%s", bin, readyMarker, timeout, p.Output())
	}
	return nil
}

// Kill sends SIGKILL and waits for the process to exit: a crash, with no
// chance to clean up. It is a no-op once the process has exited.
func (p *GatewayProcess) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop sends SIGTERM and waits for a graceful exit, returning the exit
// error (nil for status 0). A process still running after 30s is killed
// and reported as an error.
func (p *GatewayProcess) Stop() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.waitErr
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("testsupport: gateway ignored SIGTERM for %v and was killed", stopTimeout)
	}
}

// Pid is the process's id (to set its resource limits, say).
func (p *GatewayProcess) Pid() int { return p.cmd.Process.Pid }

// Output returns everything the process wrote to stdout and stderr so far.
func (p *GatewayProcess) Output() string { return p.out.String() }

// Exited is closed once the process has exited, for tests that expect it
// to exit on its own.
func (p *GatewayProcess) Exited() <-chan struct{} { return p.exited }

// readyWatcher passes one output stream through to the buffer and reports
// the URL of the first complete ready line. exec copies each stream from a
// single goroutine, so line assembly needs no lock; announce is shared by
// both streams and must tolerate being called twice.
type readyWatcher struct {
	out      *SyncBuffer
	announce func(url string)
	partial  []byte
	found    bool
}

func (w *readyWatcher) Write(p []byte) (int, error) {
	w.out.Write(p)
	if w.found {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if url, ok := readyURL(line); ok {
			w.found, w.partial = true, nil
			w.announce(url)
			return len(p), nil
		}
	}
}

// readyURL extracts http://ADDR from a ready line. A log prefix before the
// marker is tolerated so that a timestamped logger does not break tests,
// and so is a JSON line (--log-format json) whose message it is.
func readyURL(line string) (string, bool) {
	_, rest, ok := strings.Cut(strings.TrimRight(line, "\r"), readyMarker)
	if !ok {
		return "", false
	}
	// Up to a space (text), or the quote that ends a JSON line's message.
	url := strings.TrimSpace(rest)
	if i := strings.IndexAny(url, " \""); i >= 0 {
		url = url[:i]
	}
	if !strings.HasPrefix(url, "http://") || len(url) == len("http://") {
		return "", false
	}
	return url, true
}

// Signal sends sig to the process (e.g. SIGHUP to reload its config).
func (p *GatewayProcess) Signal(sig os.Signal) {
	_ = p.cmd.Process.Signal(sig)
}
