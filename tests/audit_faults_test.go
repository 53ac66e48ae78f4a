package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/testsupport"
)

// The audit trail under faults of its output, on a real gateway process:
// a file that cannot grow (the process's file size limit: a full disk
// for it), a FIFO nobody reads at start-up, a reader that stalls while
// the gateway shuts down. Whatever the output does, the gateway starts
// or says why at once, stops within its bound, counts what it lost, and
// leaves a file that parses.

// auditFileGateway starts a gateway whose audit trail goes to output.
func auditFileGateway(t *testing.T, c *cluster, output string) *testsupport.GatewayProcess {
	t.Helper()
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig("audit:\n  output: " + output + "\n" + cfg)
	return testsupport.StartGateway(t, c.bin, []string{"--config", c.config, "--redis-url", redisSrv.URL(), "--log-format", "json"},
		[]string{jwtSecretEnv + "=" + string(jwtSecret)})
}

// setFileSizeLimit sets the largest file process pid may write.
func setFileSizeLimit(t *testing.T, pid int, bytes uint64) {
	t.Helper()
	lim := unix.Rlimit{Cur: bytes, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
}

// droppedFor reads mcpgw_audit_dropped_total{reason} off the gateway.
func droppedFor(t *testing.T, g *testsupport.GatewayProcess, reason string) float64 {
	t.Helper()
	for _, m := range testsupport.ScrapeMetrics(t, g.URL)["mcpgw_audit_dropped_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no mcpgw_audit_dropped_total{reason=%q}", reason)
	return 0
}

// jsonLines counts the lines of path, failing the test on one that does
// not parse (torn, or glued to a fragment).
func jsonLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), `{"time":"`) || !strings.HasSuffix(sc.Text(), "}") || !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d of the audit file does not parse: %q", n+1, sc.Text())
		}
		n++
	}
	return n
}

// logCount counts the gateway's log lines whose message contains msg.
func logCount(t *testing.T, g *testsupport.GatewayProcess, msg string) int {
	n := 0
	for _, l := range logLines(t, g.Output()) {
		if m, _ := l["msg"].(string); strings.Contains(m, msg) {
			n++
		}
	}
	return n
}

// The file can grow no more (a full disk for this process): every line
// is written whole or counted in mcpgw_audit_dropped_total{write_failed},
// the failures are logged once per interval with their count (not once a
// line), and once there is room again the file goes on, every line of it
// parsing: nothing torn, nothing glued to a fragment.
func TestAudit_AFullFileCountsItsLossAndStillParses(t *testing.T) {
	c := newCluster(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	g := auditFileGateway(t, c, path)
	setFileSizeLimit(t, g.Pid(), 16<<10)
	token := c.token("fay")
	start := time.Now()
	call := func(i int) {
		text := fmt.Sprint("call-", i)
		if got := modernCall(t, g, token, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": text}}).Text(); got != text {
			t.Fatalf("echo %q answered %q", text, got)
		}
	}
	const full, freed = 250, 40
	for i := range full {
		call(i)
	}
	accounted := func(want int) (lines int, lost float64) {
		t.Helper()
		if !testsupport.Eventually(t, 15*time.Second, func() bool {
			lines, lost = jsonLines(t, path), droppedFor(t, g, audit.DropWriteFailed)
			return lines+int(lost) == want
		}) {
			t.Fatalf("%d lines written and %d counted lost of %d: every line must be one or the other", lines, int(lost), want)
		}
		return lines, lost
	}
	lines, lost := accounted(full)
	if lost == 0 || lines == 0 {
		t.Fatalf("with a 16 KiB file: %d lines written, %v lost; want both", lines, lost)
	}
	setFileSizeLimit(t, g.Pid(), unix.RLIM_INFINITY) // room again
	for i := range freed {
		call(full + i)
	}
	if l, _ := accounted(full + freed); l != lines+freed {
		t.Fatalf("after room came back the file holds %d lines, want %d", l, lines+freed)
	}
	t.Logf("%d of %d lines written, %v counted lost while the file could not grow", lines, full, lost)
	logs := logCount(t, g, "writing to the audit output failed")
	if most := 1 + int(time.Since(start)/(10*time.Second)); logs < 1 || logs > most {
		t.Fatalf("%d log lines about %v lost audit lines in %v, want 1 to %d", logs, lost, time.Since(start), most)
	}
	if logCount(t, g, "takes lines again") != 1 {
		t.Fatalf("the recovery is not logged:\n%s", g.Output())
	}
	if b, s := droppedFor(t, g, audit.DropBufferFull), droppedFor(t, g, audit.DropShutdown); b != 0 || s != 0 {
		t.Fatalf("dropped for buffer_full %v, shutdown %v: want write_failed only", b, s)
	}
}

// A FIFO nobody reads: the gateway says so and exits at once, rather
// than blocking in open(2) before its health endpoint ever answers.
func TestAudit_AFIFOWithoutAReaderStopsStartUpAtOnce(t *testing.T) {
	c := newCluster(t)
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := readFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	c.writeConfig("audit:\n  output: " + fifo + "\n" + cfg)
	start := time.Now()
	_, stderr, code := runBinary(t, c.bin, []string{jwtSecretEnv + "=" + string(jwtSecret)},
		"--config", c.config, "--redis-url", redisSrv.URL(), "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(stderr, fifo) || !strings.Contains(stderr, "FIFO that nobody reads") {
		t.Fatalf("exit %d after %v, stderr %q: want 1 and the FIFO named", code, time.Since(start), stderr)
	}
}

// A reader that stalls: SIGTERM ends the gateway within the audit
// writer's bound (5 s) plus the rest of the shutdown, the lines it could
// not write counted and logged, instead of waiting for the pipe for ever.
func TestAudit_SIGTERMWithAStalledReaderEndsWithinTheBound(t *testing.T) {
	c := newCluster(t)
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0) // there, never reading
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	g := auditFileGateway(t, c, fifo)
	token := c.token("gus")
	for i := range 400 { // some 150 KB of lines: far more than a pipe holds
		modernCall(t, g, token, "tools/call", map[string]any{"name": "gateway-one-echo", "arguments": map[string]any{"text": fmt.Sprint(i)}})
	}
	start := time.Now()
	if err := g.Stop(); err != nil {
		t.Fatalf("SIGTERM with a stalled audit reader: %v after %v", err, time.Since(start))
	}
	took := time.Since(start)
	if took > 20*time.Second {
		t.Fatalf("the gateway took %v to stop, want about the audit writer's bound (%v)", took, audit.CloseWait)
	}
	t.Logf("stopped %v after SIGTERM (the audit writer's bound: %v)", took, audit.CloseWait)
	if logCount(t, g, "took no line for the shutdown wait") != 1 {
		t.Fatalf("the lines dropped at shutdown are not logged:\n%s", g.Output())
	}
}
