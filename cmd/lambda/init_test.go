package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// A bad config ends the init with exit status 1 and one JSON log line that
// names the source and the field, so Lambda reports an init error an
// operator can act on.
func TestInit_BadConfigExitsWithOneClearLine(t *testing.T) {
	t.Parallel()
	bin := bootstrapBinary(t)
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"bad field", []string{envConfigYAML + "=virtual_hosts:\n  demo:\n    backends:\n      one: {url: \"ftp://x\"}\n"},
			[]string{"MCPGW_CONFIG_YAML", "virtual_hosts.demo.backends.one.url"}},
		{"missing file", []string{envConfig + "=/nonexistent/gateway.yaml"}, []string{"/nonexistent/gateway.yaml"}},
		{"no config", nil, []string{"MCPGW_CONFIG", "MCPGW_CONFIG_YAML"}},
		{"two configs", []string{envConfig + "=a.yaml", envConfigYAML + "=auth: {mode: none}"}, []string{"both"}},
		{"bad mode", []string{envMode + "=websocket"}, []string{"MCPGW_LAMBDA_MODE", "websocket"}},
		{"stdio backend", []string{envConfigYAML + "=auth: {mode: none}\nvirtual_hosts: {demo: {backends: {files: {transport: stdio, command: npx}}}}"},
			[]string{"MCPGW_CONFIG_YAML", "virtual_hosts.demo.backends.files.transport", "not supported on AWS Lambda"}},
		{"bad redis url", []string{envConfigYAML + "=auth: {mode: none}\nvirtual_hosts: {demo: {backends: {one: {url: \"http://127.0.0.1:1/mcp\"}}}}",
			envRedisURL + "=memcached://x"}, []string{"MCPGW_REDIS_URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bin)
			cmd.Env = append(cleanEnv(), tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			var rec struct{ Level, Msg string }
			if err := json.Unmarshal([]byte(last), &rec); err != nil || rec.Level != "ERROR" || !strings.HasPrefix(rec.Msg, "mcpgw lambda: init failed: ") {
				t.Fatalf("last stderr line %q: want one JSON error line", last)
			}
			for _, w := range tc.want {
				if !strings.Contains(rec.Msg, w) {
					t.Errorf("message %q lacks %q", rec.Msg, w)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
		})
	}
}

// The init does no network I/O: with a Redis that accepts connections and
// never answers, the init still completes (the emulator reports it) while
// the first request waits; the store is first reached from that request.
func TestInit_TouchesNoStore(t *testing.T) {
	t.Parallel()
	trip := startTripwire(t)
	f := newFixture(t)
	rie := startRIE(t, f.lambdaEnv("url", envRedisURL+"=redis://"+trip.addr())...)
	ep := &functionURL{rie: rie, domain: functionURLDomain}

	done := make(chan error, 1)
	ev := ep.event(t, http.MethodGet, "/healthz", nil, nil)
	go func() { _, err := rie.tryInvoke(ev); done <- err }()

	// Lambda allows an init 10 s; a store round trip at init would wait
	// that long here (the bus subscription's timeout).
	if !testsupport.Eventually(t, 5*time.Second, func() bool { return initReportRE.MatchString(rie.Output()) }) {
		t.Fatalf("the init did not complete while the store was unresponsive:\n%s", rie.Output())
	}
	if !testsupport.Eventually(t, 15*time.Second, func() bool { return trip.connections() > 0 }) {
		t.Fatal("the first request did not reach the store")
	}
	trip.release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first request did not complete once the store connection dropped")
	}
}

// tripwire is a TCP server that accepts connections and holds them,
// silent, until released.
type tripwire struct {
	ln       net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	released bool
}

func startTripwire(t *testing.T) *tripwire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tw := &tripwire{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tw.mu.Lock()
			if tw.released {
				c.Close()
			} else {
				tw.conns = append(tw.conns, c)
			}
			tw.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); tw.release() })
	return tw
}

func (tw *tripwire) addr() string { return tw.ln.Addr().String() }

func (tw *tripwire) connections() int {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return len(tw.conns)
}

// release closes every held connection and every later one at once.
func (tw *tripwire) release() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.released = true
	for _, c := range tw.conns {
		c.Close()
	}
}

// Cold start under the emulator, for docs/guide/lambda.md. Reported, not
// asserted: run `go test -race -run TestColdStart -v ./cmd/lambda/`.
//
//   - platform init: the emulator's INIT REPORT, from starting the
//     bootstrap process to its first request for an event: what Lambda
//     reports as Init Duration;
//   - function init: the function's own init (env, config, validation);
//   - first request: initialize on a fresh environment, seen by the
//     client: the emulator starts the bootstrap on the first invocation, so
//     this includes the platform init, then assembling the gateway (store
//     connection, bus subscription) and probing both backends; a warm
//     initialize follows for comparison.
func TestColdStart_UnderEmulator(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const runs = 5
	var platform, function, first, warm []float64
	for range runs {
		rie := startRIE(t, f.lambdaEnv("url")...)
		ep := &functionURL{rie: rie, domain: functionURLDomain}
		start := time.Now()
		c := f.client(t, "coldstart")
		c.Initialize(ep, nil)
		first = append(first, ms(time.Since(start)))
		start = time.Now()
		c2 := f.client(t, "coldstart")
		c2.Initialize(ep, nil)
		warm = append(warm, ms(time.Since(start)))
		if !testsupport.Eventually(t, 5*time.Second, func() bool { _, _, ok := rie.initDurations(); return ok }) {
			t.Fatalf("no INIT REPORT / init line in the output:\n%s", rie.Output())
		}
		p, fn, _ := rie.initDurations()
		platform, function = append(platform, p), append(function, fn)
		rie.stop()
	}
	size := "?"
	if st, err := os.Stat(bootstrapBinary(t)); err == nil {
		size = fmt.Sprintf("%.1f MB", float64(st.Size())/1e6)
	}
	t.Logf("cold start under the Runtime Interface Emulator, %d fresh environments (bootstrap %s, %s/%s, %d CPUs), median [min-max] ms:",
		runs, size, osArch(), cpuModel(), numCPU())
	t.Logf("  platform init (INIT REPORT):         %s", summary(platform))
	t.Logf("  function init (config, validation):  %s", summary(function))
	t.Logf("  first request (initialize; includes the init and assembling the gateway): %s", summary(first))
	t.Logf("  next request (initialize, warm):     %s", summary(warm))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func summary(v []float64) string {
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.1f [%.1f-%.1f]", s[len(s)/2], s[0], s[len(s)-1])
}

func osArch() string { return runtime.GOOS + "/" + runtime.GOARCH }

func numCPU() int { return runtime.NumCPU() }

// cpuModel names the CPU for the report, where the OS says.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// A store that can never work (here: it wants a password the URL lacks)
// gets every request a 503 that says so, as the server's start-up does,
// and is tried again on the next request (a fixed secret reaches a new
// execution environment; a fixed store, this one).
func TestLazyApp_StoreThatCanNeverWorkIs503SayingSo(t *testing.T) {
	locked, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locked.Stop)
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "only-the-store-knows").Err(); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	for _, kv := range f.secrets() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	fn, err := setup(envMap(map[string]string{envConfigYAML: f.configYAML, envRedisURL: "redis://" + locked.Addr, envMode: "url"}), discardLogger())
	if err != nil {
		t.Fatal(err) // the URL's form is fine: init does not touch the store
	}
	t.Cleanup(fn.lazy.close)
	rec := httptest.NewRecorder()
	fn.lazy.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "cannot work with this URL") || !strings.Contains(rec.Body.String(), "NOAUTH") {
		t.Fatalf("first request: %d %s, want 503 saying the store cannot work", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "only-the-store-knows") {
		t.Fatal("the answer quotes the password")
	}
	// The store now takes the URL as it is: the next request builds.
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", "").Err(); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	fn.lazy.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("after the fix: %d %s", rec.Code, rec.Body)
	}
}
