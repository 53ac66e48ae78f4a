package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// rieProcess is the Runtime Interface Emulator running the bootstrap: an
// execution environment with its own init and a Runtime API, invoked over
// HTTP. It runs one invocation at a time, like Lambda's environments.
type rieProcess struct {
	t         testing.TB
	invokeURL string
	cmd       *exec.Cmd
	out       *testsupport.SyncBuffer
	exited    chan struct{}

	mu sync.Mutex // one invocation at a time
}

// functionTimeout is the function's time limit under the emulator.
const functionTimeout = 30 * time.Second

// startRIE starts the emulator with env added to a clean copy of the
// test's environment (no MCPGW_ or AWS_LAMBDA_ variables leak in from the
// developer's shell). The bootstrap process, and with it the function's
// init, starts on the first invocation, as on Lambda.
func startRIE(t testing.TB, env ...string) *rieProcess {
	t.Helper()
	rie, bootstrap := rieBinary(t), bootstrapBinary(t)
	var lastErr error
	for range 3 { // a free port can be taken before RIE binds it
		p, err := tryStartRIE(t, rie, bootstrap, env)
		if err == nil {
			return p
		}
		lastErr = err
	}
	t.Fatalf("starting the Runtime Interface Emulator: %v", lastErr)
	return nil
}

func tryStartRIE(t testing.TB, rie, bootstrap string, env []string) (*rieProcess, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testsupport.FreePort(t)))
	apiAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testsupport.FreePort(t)))
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", addr,
		"--runtime-api-address", apiAddr,
		bootstrap)
	cmd.Env = append(cleanEnv(), "AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(functionTimeout.Seconds())))
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = t.TempDir()
	out := &testsupport.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd) // the bootstrap is RIE's child: end both together
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &rieProcess{t: t, invokeURL: "http://" + addr + "/2015-03-31/functions/function/invocations",
		cmd: cmd, out: out, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()

	// RIE says nothing when it starts listening: wait until it accepts.
	var exited bool
	listening := testsupport.Eventually(t, 10*time.Second, func() bool {
		select {
		case <-p.exited:
			exited = true
			return true
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	switch {
	case exited:
		return nil, fmt.Errorf("emulator exited: %s", out.String())
	case !listening:
		p.stop()
		return nil, fmt.Errorf("emulator not listening on %s after 10s: %s", addr, out.String())
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("emulator and function output:\n%s", p.out.String())
		}
	})
	return p, nil
}

// stop kills the emulator and the bootstrap it started (one process group).
func (p *rieProcess) stop() {
	killProcessGroup(p.cmd)
	<-p.exited
}

// cleanEnv is the test's environment without variables that configure the
// gateway or Lambda, so that only what a test sets reaches the function.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCPGW_") || strings.HasPrefix(kv, "AWS_LAMBDA_") || strings.HasPrefix(kv, "_HANDLER=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// invoke sends one event and returns the function's response payload as
// the emulator returns it: whole, also for a streamed response.
func (p *rieProcess) invoke(event []byte) []byte {
	p.t.Helper()
	body, err := p.tryInvoke(event)
	if err != nil {
		p.t.Fatal(err)
	}
	return body
}

// tryInvoke is invoke for goroutines other than the test's.
func (p *rieProcess) tryInvoke(event []byte) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), functionTimeout+10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.invokeURL, bytes.NewReader(event))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke: reading the response: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: emulator answered %d: %s", res.StatusCode, body)
	}
	return body, nil
}

// Output is everything the emulator and the function printed so far.
func (p *rieProcess) Output() string { return p.out.String() }

var (
	// RIE's platform log line for a finished init: from INIT START (the
	// bootstrap process is started) to the runtime's first request for an
	// event, which is what Lambda bills and reports as Init Duration.
	initReportRE = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)
	// The function's own line: time spent in main before serving.
	initLineRE = regexp.MustCompile(`"msg":"mcpgw lambda: initialized".*"init_duration_ms":([0-9.]+)`)
)

// initDurations returns the emulator's init duration and the function's
// own, in milliseconds, once both are logged.
func (p *rieProcess) initDurations() (platform, function float64, ok bool) {
	out := p.Output()
	m1, m2 := initReportRE.FindStringSubmatch(out), initLineRE.FindStringSubmatch(out)
	if m1 == nil || m2 == nil {
		return 0, 0, false
	}
	platform, _ = strconv.ParseFloat(m1[1], 64)
	function, _ = strconv.ParseFloat(m2[1], 64)
	return platform, function, true
}
