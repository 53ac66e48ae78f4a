package main

// The tests here run the real bootstrap binary, built as it is deployed,
// under the AWS Lambda Runtime Interface Emulator (RIE), on a real Redis
// and real backends, and feed it the events Lambda sends: Function URL,
// API Gateway (v2 and v1) and ALB. RIE is built from source with the Go
// toolchain on first use (see rieBinary).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	if testsupport.Short() {
		fmt.Println("skipped under -short: every test here runs processes")
		os.Exit(0)
	}
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	testsupport.Cleanup()
	removeBuilds()
	os.Exit(code)
}

// rieVersion pins the emulator: the newest one the Go module proxy served
// when these tests were written.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
const rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"

var builds struct {
	once      sync.Once
	dir       string
	bootstrap string
	err       error

	rieOnce sync.Once
	rie     string
	rieSkip string // why the RIE tests are skipped, when they are
	rieErr  error
}

func removeBuilds() {
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
}

// bootstrapBinary builds ./cmd/lambda once, for the host, with the flags
// the Makefile uses for Lambda (no -race: it is the deployed artifact whose
// cold start the tests measure; the package's own code runs under -race in
// the in-process tests).
func bootstrapBinary(t testing.TB) string {
	t.Helper()
	builds.once.Do(func() {
		builds.dir, builds.err = os.MkdirTemp("", "mcpgw-lambda-test-")
		if builds.err != nil {
			return
		}
		builds.bootstrap = filepath.Join(builds.dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w",
			"-o", builds.bootstrap, "github.com/mcpgw/gateway/cmd/lambda")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			builds.err = fmt.Errorf("go build ./cmd/lambda: %v\n%s", err, out)
		}
	})
	if builds.err != nil {
		t.Fatal(builds.err)
	}
	return builds.bootstrap
}

// rieBinary finds the emulator: $MCPGW_RIE, then aws-lambda-rie on PATH,
// then the repository's tool cache (.cache/tools); failing all three it is
// built into that cache with `go install`. Only when the Go module proxy
// cannot be reached are the tests that need it skipped, saying so.
func rieBinary(t testing.TB) string {
	t.Helper()
	builds.rieOnce.Do(func() {
		builds.rie, builds.rieSkip, builds.rieErr = findOrInstallRIE()
	})
	switch {
	case builds.rieErr != nil:
		t.Fatal(builds.rieErr)
	case builds.rieSkip != "":
		t.Skip(builds.rieSkip)
	}
	return builds.rie
}

func findOrInstallRIE() (path, skip string, err error) {
	if p := os.Getenv("MCPGW_RIE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("MCPGW_RIE=%s: %v", p, err)
		}
		return p, "", nil
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p, "", nil
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", "", fmt.Errorf("cannot find the repository root from %s: %v", root, err)
	}
	dir := filepath.Join(root, ".cache", "tools", runtime.GOOS+"-"+runtime.GOARCH)
	bin := filepath.Join(dir, "aws-lambda-rie")
	if _, err := os.Stat(bin); err == nil {
		return bin, "", nil
	}
	// Install into a private directory and rename into place, so that a
	// concurrent run never executes a half-written binary.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp(dir, "install-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "install", rieModule+"@"+rieVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0")
	cmd.Dir = tmp // outside the module: `go install pkg@version` needs no go.mod
	out, err := cmd.CombinedOutput()
	if err != nil {
		if unreachable(string(out)) {
			return "", fmt.Sprintf("the AWS Lambda Runtime Interface Emulator is not installed and the Go module proxy is unreachable, so it cannot be built "+
				"(set MCPGW_RIE to an aws-lambda-rie binary to run these tests):\n%s", out), nil
		}
		return "", "", fmt.Errorf("go install %s@%s: %v\n%s", rieModule, rieVersion, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "aws-lambda-rie"), bin); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", err
	}
	return bin, "", nil
}

// unreachable recognises go command output caused by having no network
// path to the module proxy.
func unreachable(out string) bool {
	for _, s := range []string{"dial tcp", "no such host", "i/o timeout", "connection refused",
		"network is unreachable", "proxyconnect", "TLS handshake timeout", "GOPROXY=off", "module lookup disabled"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
