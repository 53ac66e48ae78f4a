package tests

// scripts/test-deps.sh, make test's first step on a fresh machine: its
// decisions (install with apt-get, or stop and name what to install),
// checked with a PATH of the test's own that lacks redis-server, and fake
// id and apt-get. apt itself is not run.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type depsMachine struct {
	bin, log, osRelease string
}

// newDepsMachine is a PATH holding bash and grep, stubs for the commands
// in present, an id that prints uid, and an apt-get that records its
// arguments in log and, on install, puts stubs of provides on the PATH.
func newDepsMachine(t *testing.T, uid string, osID string, present, provides []string) *depsMachine {
	t.Helper()
	dir := t.TempDir()
	m := &depsMachine{bin: filepath.Join(dir, "bin"), log: filepath.Join(dir, "apt.log"), osRelease: filepath.Join(dir, "os-release")}
	if err := os.Mkdir(m.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "grep"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found", tool)
		}
		if err := os.Symlink(real, filepath.Join(m.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	stub := func(name, body string) {
		if err := os.WriteFile(filepath.Join(m.bin, name), []byte("#!"+filepath.Join(m.bin, "bash")+"\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range present {
		stub(c, "exit 0")
	}
	stub("id", "echo "+uid)
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Skip("chmod not found")
	}
	var install strings.Builder
	for _, c := range provides {
		p := filepath.Join(m.bin, c)
		install.WriteString("  printf '#!/bin/sh\\nexit 0\\n' > " + p + " && " + chmod + " 755 " + p + "\n")
	}
	stub("apt-get", `echo "$*" >> `+m.log+`
if [ "$1" = install ]; then
  :
`+install.String()+`fi`)
	if err := os.WriteFile(m.osRelease, []byte("PRETTY_NAME=\"x\"\nID="+osID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs the script on the machine and returns its exit status, stderr
// and what apt-get was asked.
func (m *depsMachine) run(t *testing.T) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.bin, "bash"), repoPath("scripts", "test-deps.sh"))
	cmd.Env = []string{"PATH=" + m.bin, "MCPGW_OS_RELEASE=" + m.osRelease}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	apt, _ := os.ReadFile(m.log)
	return code, stderr.String(), string(apt)
}

func TestTestDeps_Decisions(t *testing.T) {
	all := []string{"redis-server", "redis-cli", "npm", "gcc"}
	noRedis := []string{"npm", "gcc"}
	cases := []struct {
		name              string
		uid, os           string
		present, provides []string
		wantCode          int
		wantApt           string
		wantStderr        []string
	}{
		{name: "everything there: nothing said, nothing installed", uid: "1000", os: "debian", present: all},
		{name: "root on Debian: installs what is missing", uid: "0", os: "debian", present: noRedis,
			provides: []string{"redis-server", "redis-cli"},
			wantApt:  "update -qq\ninstall -y -qq redis-server redis-tools\n", wantStderr: []string{"installing redis-server redis-tools"}},
		{name: "root on Ubuntu, nothing there", uid: "0", os: "ubuntu", present: nil,
			provides: all,
			wantApt:  "update -qq\ninstall -y -qq redis-server redis-tools nodejs npm gcc\n"},
		{name: "not root on Debian: stops with the apt-get line", uid: "1000", os: "debian", present: noRedis,
			wantCode: 1, wantStderr: []string{"make test needs redis-server redis-cli", "apt-get install redis-server redis-tools    (as root"}},
		{name: "root elsewhere: stops, naming packages for each system", uid: "0", os: "fedora", present: []string{"redis-server", "redis-cli", "gcc"},
			wantCode: 1, wantStderr: []string{"make test needs npm", "Debian/Ubuntu:    apt-get install nodejs npm", "brew install node"}},
		{name: "apt-get does not provide it: says so", uid: "0", os: "debian", present: noRedis,
			provides: []string{"redis-cli"},
			wantCode: 1, wantApt: "update -qq\ninstall -y -qq redis-server redis-tools\n", wantStderr: []string{"redis-server is still not on PATH"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newDepsMachine(t, tc.uid, tc.os, tc.present, tc.provides)
			code, stderr, apt := m.run(t)
			if code != tc.wantCode || apt != tc.wantApt {
				t.Fatalf("exit %d, apt-get asked %q; want %d and %q\nstderr: %s", code, apt, tc.wantCode, tc.wantApt, stderr)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if len(tc.wantStderr) == 0 && tc.wantApt == "" && stderr != "" {
				t.Errorf("stderr %q, want silence", stderr)
			}
		})
	}
}
