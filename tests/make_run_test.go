//go:build unix

package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// `make run` stops cleanly on Ctrl-C typed in its terminal: the gateway
// shuts down and make exits 0. The test gives make a real terminal (a
// pty) and types Ctrl-C into it, so the terminal's line discipline sends
// SIGINT to its foreground process group, exactly as for a user. (make
// itself dies of a SIGINT it receives, so the recipe hands the terminal to
// the gateway alone; see the Makefile.)
func TestMake_RunExitsZeroOnCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the gateway with make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("this machine has no pseudo-terminals (/dev/ptmx), which the test types Ctrl-C into")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "run", "BIN="+t.TempDir())
	cmd.Dir = repoPath()
	cmd.Env = append(os.Environ(), "MCPGW_LISTEN=127.0.0.1:0")
	cmd.WaitDelay = 10 * time.Second
	term, err := pty.Start(cmd) // make's stdin, stdout and stderr, and its controlling terminal
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()

	var mu sync.Mutex
	var out bytes.Buffer
	listening, drained := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 4096)
		announced := false
		for {
			n, err := term.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			seen := strings.Contains(out.String(), "mcpgw: listening on ")
			mu.Unlock()
			if seen && !announced {
				announced = true
				close(listening)
			}
			if err != nil { // EIO once every process has closed the terminal
				return
			}
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	select {
	case <-listening:
	case <-drained:
		t.Fatalf("make run ended before the gateway listened: %v\n%s", cmd.Wait(), output())
	case <-ctx.Done():
		t.Fatalf("the gateway did not start:\n%s", output())
	}
	if _, err := term.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	select { // every process has closed the terminal: all output is read
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatalf("the terminal stayed open after make exited:\n%s", output())
	}
	if err != nil {
		t.Fatalf("make run after Ctrl-C: %v, want exit status 0\n%s", err, output())
	}
	if !strings.Contains(output(), "shutting down") {
		t.Fatalf("the gateway did not shut down gracefully (%d bytes):\n%q", len(output()), output())
	}
}
