package tests

// infra/Dockerfile: a small, static, non-root image.

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ---------------------------------------------------------------------------
// infra/Dockerfile
// ---------------------------------------------------------------------------

type dockerInstr struct {
	cmd  string // upper case
	args string
}

type dockerStage struct {
	from, name string
	instrs     []dockerInstr
}

// parseDockerfile splits a Dockerfile into stages of instructions, joining
// continuation lines and dropping comments.
func parseDockerfile(t *testing.T) []*dockerStage {
	t.Helper()
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(mustRead(t, "infra", "Dockerfile")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatal("infra/Dockerfile ends with a continuation line")
	}
	var stages []*dockerStage
	globalArgs := map[string]string{} // ARGs before the first FROM, with their defaults
	for _, l := range lines {
		cmd, args, _ := strings.Cut(l, " ")
		in := dockerInstr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "ARG" && len(stages) == 0 {
			k, v, _ := strings.Cut(in.args, "=")
			globalArgs[k] = v
			continue
		}
		if in.cmd == "FROM" {
			var f []string
			for _, w := range strings.Fields(in.args) {
				if !strings.HasPrefix(w, "--") { // --platform=…
					f = append(f, w)
				}
			}
			from := os.Expand(f[0], func(k string) string { return globalArgs[k] })
			st := &dockerStage{from: from}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	return stages
}

func dockerStageNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, s := range parseDockerfile(t) {
		names = append(names, s.name)
	}
	return names
}

// last returns the arguments of the stage's last instruction cmd.
func (s *dockerStage) last(cmd string) (string, bool) {
	for i := len(s.instrs) - 1; i >= 0; i-- {
		if s.instrs[i].cmd == cmd {
			return s.instrs[i].args, true
		}
	}
	return "", false
}

func dockerStageByName(t *testing.T, stages []*dockerStage, name string) *dockerStage {
	t.Helper()
	for _, st := range stages {
		if st.name == name {
			return st
		}
	}
	t.Fatalf("infra/Dockerfile has no stage %q", name)
	return nil
}

// user is the stage's USER, or its parent stage's when it sets none.
func (s *dockerStage) user(stages []*dockerStage) string {
	for st := s; st != nil; {
		if u, ok := st.last("USER"); ok {
			return u
		}
		parent := st
		st = nil
		for _, p := range stages {
			if p.name == parent.from {
				st = p
			}
		}
	}
	return ""
}

func TestDeploy_Dockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	build := dockerStageByName(t, stages, "build-source")
	if !strings.Contains(build.from, "golang:") {
		t.Errorf("build-source FROM %s, want a golang image", build.from)
	}

	// The builder cross-compiles both binaries statically.
	var builds string
	for _, in := range build.instrs {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			builds += in.args + "\n"
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOARCH=${TARGETARCH}", "-trimpath", "-s -w", "./cmd/gateway", "./localdev/cmd/demo-backend"} {
		if !strings.Contains(builds, want) {
			t.Errorf("builder's go build commands lack %q:\n%s", want, builds)
		}
	}

	// The default target (last stage) is the gateway FROM scratch: one
	// static binary, a numeric non-root user, no shell.
	final := stages[len(stages)-1]
	if final.name != "gateway" || final.from != "scratch" {
		t.Errorf("final stage %s FROM %s, want gateway FROM scratch", final.name, final.from)
	}
	if user, _ := final.last("USER"); user != "65532:65532" {
		t.Errorf("final USER %q, want 65532:65532", user)
	}
	if ep, _ := final.last("ENTRYPOINT"); ep != `["/gateway"]` {
		t.Errorf(`final ENTRYPOINT %s, want ["/gateway"]`, ep)
	}
	if copyArgs, _ := final.last("COPY"); copyArgs != "--from=binaries /out/gateway /gateway" {
		t.Errorf("final COPY %q: want the gateway binary copied from the binaries stage to /gateway", copyArgs)
	}
	if expose, _ := final.last("EXPOSE"); expose != "8080" {
		t.Errorf("final EXPOSE %q, want 8080", expose)
	}

	// The images people run: a numeric non-root user (Kubernetes'
	// runAsNonRoot checks the uid), no RUN (built for every architecture
	// without emulation), and the published ones labelled.
	for _, name := range []string{"gateway", "stdio-node", "stdio", "demo-backend"} {
		st := dockerStageByName(t, stages, name)
		uid, _, _ := strings.Cut(st.user(stages), ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Errorf("stage %s: USER %q, want a numeric non-root user", name, st.user(stages))
		}
		for _, in := range st.instrs {
			if in.cmd == "RUN" {
				t.Errorf("stage %s runs %q: runtime stages only COPY, so every architecture builds without emulation", name, in.args)
			}
		}
	}
	for _, name := range []string{"gateway", "stdio"} {
		label, _ := dockerStageByName(t, stages, name).last("LABEL")
		for _, k := range []string{"version", "revision", "source", "licenses"} {
			if !strings.Contains(label, "org.opencontainers.image."+k+"=") {
				t.Errorf("stage %s has no org.opencontainers.image.%s label", name, k)
			}
		}
	}
	// The stdio image carries npx and uvx on top of a Python base.
	stdioNode := dockerStageByName(t, stages, "stdio-node")
	var copies string
	for _, st := range []*dockerStage{stdioNode, dockerStageByName(t, stages, "stdio")} {
		for _, in := range st.instrs {
			if in.cmd == "COPY" {
				copies += in.args + "\n"
			}
		}
	}
	for _, want := range []string{"--from=node /usr/local/bin/", "--from=node /usr/local/lib/node_modules/", "--from=uv /uv /uvx", "--from=binaries /out/gateway"} {
		if !strings.Contains(copies, want) {
			t.Errorf("stdio stages lack COPY %s:\n%s", want, copies)
		}
	}
	if !strings.Contains(stdioNode.from, "python") {
		t.Errorf("stdio-node FROM %s, want a Python base (uvx runs Python servers)", stdioNode.from)
	}

	ignore := strings.Fields(string(mustRead(t, ".dockerignore")))
	for _, want := range []string{".git", ".cache", "bin"} {
		if !slices.Contains(ignore, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	if slices.Contains(ignore, "dist") {
		t.Error(".dockerignore lists dist: BINARIES=dist builds from it")
	}
}
