package tests

// The compose topology, run with the binaries instead of containers.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// ---------------------------------------------------------------------------
// The compose topology, run without Docker
// ---------------------------------------------------------------------------

// TestDeploy_ComposeTopologyWithoutDocker runs what docker-compose.yml
// describes with the binaries: two demo backends, two gateways on one
// Redis with localdev/gateway.yaml (backend host names replaced by the
// local addresses), and a round-robin proxy with no affinity in front. A
// real MCP client goes through the proxy; one gateway is killed mid-session.
func TestDeploy_ComposeTopologyWithoutDocker(t *testing.T) {
	gatewayBin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	backendBin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/localdev/cmd/demo-backend")
	proxyBin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/localdev/cmd/rrproxy")

	// Backends: each service's command, on a loopback port of its own.
	// demo-backend logs "demo-backend: ... NAME listening on URL (...)".
	compose := loadCompose(t)
	cfgText := string(mustRead(t, "localdev", "gateway.yaml"))
	for _, name := range composeServicesByTarget(compose, "demo-backend") {
		args := slices.Clone(compose.Services[name].Command)
		i := slices.Index(args, "--listen")
		args[i+1] = "127.0.0.1:0"
		ready := regexp.MustCompile(regexp.QuoteMeta(name) + ` listening on (http://\S+)/mcp`)
		_, base := startProcess(t, backendBin, args, ready)
		composeBase := "http://" + name + ":9001"
		if !strings.Contains(cfgText, composeBase+"/") {
			t.Fatalf("localdev/gateway.yaml does not use %s", composeBase)
		}
		cfgText = strings.ReplaceAll(cfgText, composeBase+"/", base+"/")
	}
	cfgPath := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}

	// Gateways: the compose command, with the test's Redis; debug logging
	// (as in compose) gives one line per request, to see who served what.
	g := compose.Services["gateway-1"]
	args := slices.Clone(g.Command)
	args[slices.Index(args, "--config")+1] = cfgPath
	args[slices.Index(args, "--redis-url")+1] = redisSrv.URL()
	args = append(args, "--log-level", "debug")
	var env []string
	for k, v := range g.Environment {
		env = append(env, k+"="+v)
	}
	gw1 := testsupport.StartGateway(t, gatewayBin, args, env)
	gw2 := testsupport.StartGateway(t, gatewayBin, args, env)

	// The proxy: "rrproxy: listening on http://ADDR" on stdout.
	_, proxyURL := startProcess(t, proxyBin,
		[]string{"--listen", "127.0.0.1:0", "--target", gw1.URL, "--target", gw2.URL},
		regexp.MustCompile(`rrproxy: listening on (http://\S+)`))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "deploy-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL(proxyURL), DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	defer cs.Close()

	listTools := func() {
		t.Helper()
		var names []string
		// Every page: the federated cursor of one instance is resumed by the other.
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			names = append(names, tool.Name)
		}
		for _, want := range []string{"gateway-one-increment", "gateway-two-increment", "gateway-two-echo", "Public.Tool"} {
			if !slices.Contains(names, want) {
				t.Fatalf("tools/list through the proxy lacks %s: %q", want, names)
			}
		}
	}
	counter := 0
	increment := func() {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gateway-one-increment", Arguments: map[string]any{"by": 1}})
		if err != nil || res.IsError {
			t.Fatalf("increment #%d: %v %+v", counter+1, err, res)
		}
		counter++
		var v struct {
			Value int `json:"value"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &v); err != nil || v.Value != counter {
			t.Fatalf("increment #%d returned %s, want value %d", counter, raw, counter)
		}
	}

	listTools()
	for range 4 {
		increment()
	}
	// Round robin with no affinity: both replicas served this session. A
	// gateway logs a request once it has answered it, so the line can
	// trail the response by a moment.
	bothServed := testsupport.Eventually(t, 5*time.Second, func() bool {
		return requestLines(gw1.Output()) > 0 && requestLines(gw2.Output()) > 0
	})
	served1, served2 := requestLines(gw1.Output()), requestLines(gw2.Output())
	if !bothServed {
		t.Fatalf("requests served: gateway 1 %d, gateway 2 %d; want both replicas used", served1, served2)
	}

	gw1.Kill() // a replica dies mid-session
	for range 4 {
		increment()
	}
	listTools()
	if !testsupport.Eventually(t, 5*time.Second, func() bool { return requestLines(gw2.Output()) >= served2+5 }) {
		t.Errorf("gateway 2 served %d requests after gateway 1 died, want at least 5", requestLines(gw2.Output())-served2)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session (DELETE) through the proxy: %v", err)
	}
}

// requestLines counts the gateway's per-request debug log lines for the
// MCP endpoint.
func requestLines(out string) int {
	return strings.Count(out, "msg=request vhost=demo http_method=POST ")
}

// deployProcess is a child process started by startProcess. It is the
// process's stdout and stderr (exec serialises their writes when both are
// the same writer) and reports the first line that matches ready.
type deployProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	ready  *regexp.Regexp
	found  chan string // the first match's group, once

	mu      sync.Mutex
	out     bytes.Buffer
	partial []byte
	matched bool
}

func (p *deployProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Write(b)
	if p.matched {
		return len(b), nil
	}
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(p.partial[:i])
		p.partial = p.partial[i+1:]
		if m := p.ready.FindStringSubmatch(line); m != nil {
			p.matched, p.partial = true, nil
			p.found <- m[1]
			return len(b), nil
		}
	}
}

func (p *deployProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// startProcess runs bin with args and returns once a line of its output
// matches ready, with the match's first group: the address the process
// announced. The process is killed when the test ends.
func startProcess(t *testing.T, bin string, args []string, ready *regexp.Regexp) (*deployProcess, string) {
	t.Helper()
	p := &deployProcess{cmd: exec.Command(bin, args...), exited: make(chan struct{}),
		ready: ready, found: make(chan string, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.WaitDelay = 5 * time.Second
	killWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(bin), p.output())
		}
	})
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	select {
	case addr := <-p.found:
		return p, addr
	case <-p.exited:
		t.Fatalf("%s exited before it was ready:\n%s", bin, p.output())
	case <-deadline.C:
		t.Fatalf("%s did not print a line matching %q within 20s:\n%s", bin, ready, p.output())
	}
	return nil, ""
}

// killWithParent asks the kernel to kill the child when the test binary
// dies (e.g. on a go test -timeout), where the platform offers it
// (Linux's Pdeathsig; the field does not exist elsewhere).
func killWithParent(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{}
	if f := reflect.ValueOf(attr).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
		cmd.SysProcAttr = attr
	}
}
