package tests

// infra/Dockerfile: a small, static, non-root image.

import (
	"bufio"
	"bytes"
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
	for _, l := range lines {
		cmd, args, _ := strings.Cut(l, " ")
		in := dockerInstr{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := &dockerStage{from: f[0]}
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

func TestDeploy_Dockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d FROM lines, want a multi-stage build", len(stages))
	}
	if !strings.HasPrefix(stages[0].from, "golang:") {
		t.Errorf("first stage FROM %s, want a golang:* builder", stages[0].from)
	}

	// The builder compiles both binaries statically.
	var builds string
	for _, in := range stages[0].instrs {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			builds += in.args + "\n"
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "./cmd/gateway", "./localdev/cmd/demo-backend"} {
		if !strings.Contains(builds, want) {
			t.Errorf("builder's go build commands lack %q:\n%s", want, builds)
		}
	}

	// The default target (last stage) is the gateway on a minimal base,
	// as a numeric non-root user.
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && final.from != "scratch" {
		t.Errorf("final stage FROM %s, want distroless static or scratch", final.from)
	}
	for _, st := range stages[1:] {
		user, ok := st.last("USER")
		uid, _, _ := strings.Cut(user, ":")
		if n, err := strconv.Atoi(uid); !ok || err != nil || n == 0 {
			t.Errorf("stage %s: USER %q, want a numeric non-root user (Kubernetes runAsNonRoot checks the uid)", st.name, user)
		}
	}
	if user, _ := final.last("USER"); user != "65532:65532" {
		t.Errorf("final USER %q, want 65532:65532 (distroless nonroot)", user)
	}
	if ep, _ := final.last("ENTRYPOINT"); ep != `["/gateway"]` {
		t.Errorf(`final ENTRYPOINT %s, want ["/gateway"]`, ep)
	}
	if copyArgs, _ := final.last("COPY"); !strings.HasSuffix(copyArgs, " /gateway") || !strings.Contains(copyArgs, "--from=") {
		t.Errorf("final COPY %q: want the gateway binary copied from the builder to /gateway", copyArgs)
	}
	if expose, _ := final.last("EXPOSE"); expose != "8080" {
		t.Errorf("final EXPOSE %q, want 8080", expose)
	}

	ignore := strings.Fields(string(mustRead(t, ".dockerignore")))
	for _, want := range []string{".git", ".cache", "bin"} {
		if !slices.Contains(ignore, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}
