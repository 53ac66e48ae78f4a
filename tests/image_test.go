package tests

// The container images of infra/Dockerfile, as podman built them
// (scripts/image-check.sh, `make image-check`, which sets the variables
// below; without them these tests skip). What each image holds is read
// from the image itself; where this machine can run a container, each is
// started: the minimal image on Redis with one tools/call through it, the
// stdio image with an npx server as a stdio backend.

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// podman runs the podman command image-check.sh set up (its storage and
// runtime flags in MCPGW_PODMAN) and returns stdout.
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	base := strings.Fields(os.Getenv("MCPGW_PODMAN"))
	cmd := exec.CommandContext(t.Context(), base[0], append(base[1:], args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("podman %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// imageTags are the tags of an environment variable, or a skip.
func imageTags(t *testing.T, env string) []string {
	t.Helper()
	tags := strings.Fields(os.Getenv(env))
	if len(tags) == 0 || os.Getenv("MCPGW_PODMAN") == "" {
		t.Skipf("%s is not set: make image-check builds the images and runs this test", env)
	}
	return tags
}

type imageConfig struct {
	Architecture, Os string
	Config           struct {
		User       string
		Entrypoint []string
		Labels     map[string]string
	}
}

func inspectImage(t *testing.T, tag string) imageConfig {
	t.Helper()
	out, err := podman(t, "image", "inspect", tag)
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []imageConfig
	if err := json.Unmarshal([]byte(out), &cfgs); err != nil || len(cfgs) != 1 {
		t.Fatalf("inspect %s: %v: %s", tag, err, out)
	}
	return cfgs[0]
}

// imageFiles lists the regular files and symbolic links of an image's
// file system (podman export of a container made from it, not started).
func imageFiles(t *testing.T, tag string) map[string]bool {
	t.Helper()
	id, err := podman(t, "create", tag)
	if err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(id)
	defer func() { _, _ = podman(t, "rm", "-f", id) }()
	out, err := podman(t, "export", id)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	tr := tar.NewReader(strings.NewReader(out))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink {
			files[strings.TrimPrefix(h.Name, "./")] = true
		}
	}
	return files
}

// archOf is the architecture a tag built by image-check.sh names.
func archOf(tag string) string {
	return tag[strings.LastIndex(tag, "-")+1:]
}

// runArgs are the flags every container here is started with: the host's
// network (the gateway reaches Redis and backends on 127.0.0.1), a
// read-only root with a tmpfs /tmp as in Kubernetes, and explicit open-file
// and process limits (podman's defaults exceed what some sandboxes allow).
var runArgs = []string{"--network", "host", "--read-only", "--ulimit", "nofile=8192:8192", "--ulimit", "nproc=8192:8192"}

// canRun starts tag with --version, or skips saying exactly why this
// machine cannot run a container.
func canRun(t *testing.T, tag, version string) {
	t.Helper()
	if archOf(tag) != runtime.GOARCH {
		t.Skipf("%s is for %s, this machine is %s", tag, archOf(tag), runtime.GOARCH)
	}
	out, err := podman(t, append(append([]string{"run", "--rm"}, runArgs...), tag, "--version")...)
	if err != nil {
		t.Skipf("this machine cannot run containers: %v", err)
	}
	if !strings.HasPrefix(out, "gateway "+version+" ") {
		t.Fatalf("%s --version: %q, want gateway %s", tag, out, version)
	}
}

// startContainer runs tag detached with the config file mounted and
// returns the gateway's MCP and admin base URLs once /readyz answers 200.
func startContainer(t *testing.T, tag, config string, extra ...string) (mcpURL, adminURL string) {
	t.Helper()
	mcpAddr := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	args := append([]string{"run", "-d"}, runArgs...)
	args = append(args, "-v", config+":/etc/mcpgw/gateway.yaml:ro")
	args = append(args, extra...)
	args = append(args, tag, "--config", "/etc/mcpgw/gateway.yaml", "--listen", mcpAddr,
		"--admin-listen", adminAddr, "--redis-url", redisSrv.URL())
	id, err := podman(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(id)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podman(t, "logs", id)
			t.Logf("container logs:\n%s", logs)
		}
		_, _ = podman(t, "rm", "-f", id)
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get("http://" + adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + mcpAddr, "http://" + adminAddr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz on the admin port did not answer 200 within 90s (%v)", tag, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func writeImageConfig(t *testing.T, backends string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	cfg := "allowed_hosts: [127.0.0.1, localhost]\nauth: {mode: none}\nvirtual_hosts:\n  demo:\n    backends:\n" + backends
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkLabels(t *testing.T, tag string, labels map[string]string, version string) {
	t.Helper()
	if labels["org.opencontainers.image.version"] != version {
		t.Errorf("%s: label version %q, want %s", tag, labels["org.opencontainers.image.version"], version)
	}
	for _, k := range []string{"source", "licenses", "revision", "title"} {
		if labels["org.opencontainers.image."+k] == "" {
			t.Errorf("%s: no org.opencontainers.image.%s label", tag, k)
		}
	}
}

func TestImage_MinimalIsOneStaticBinaryAndServes(t *testing.T) {
	tags := imageTags(t, "MCPGW_IMAGE_GATEWAY")
	version := os.Getenv("MCPGW_IMAGE_VERSION")
	var archs []string
	for _, tag := range tags {
		cfg := inspectImage(t, tag)
		archs = append(archs, cfg.Architecture)
		if cfg.Os != "linux" || cfg.Architecture != archOf(tag) {
			t.Errorf("%s: %s/%s, want linux/%s", tag, cfg.Os, cfg.Architecture, archOf(tag))
		}
		if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/gateway"}) {
			t.Errorf("%s: user %q entrypoint %q, want 65532:65532 and /gateway", tag, cfg.Config.User, cfg.Config.Entrypoint)
		}
		checkLabels(t, tag, cfg.Config.Labels, version)
		files := imageFiles(t, tag)
		delete(files, "gateway")
		for f := range files {
			if !strings.HasPrefix(f, "etc/") && !strings.HasPrefix(f, "run/") {
				t.Errorf("%s holds %s: want the gateway binary alone (no shell, no package manager)", tag, f)
			}
		}
	}
	if slices.Sort(archs); !slices.Equal(archs, []string{"amd64", "arm64"}) {
		t.Errorf("architectures %v, want amd64 and arm64", archs)
	}

	tag := tags[slices.IndexFunc(tags, func(s string) bool { return archOf(s) == runtime.GOARCH })]
	canRun(t, tag, version)
	backend := testsupport.StartBackend(t, testsupport.BackendOptions{Name: "one"}) // one backend: its tools pass unprefixed
	config := writeImageConfig(t, fmt.Sprintf("      one: {url: %q}\n", backend.URL))
	mcpURL, adminURL := startContainer(t, tag, config)
	cl := &testsupport.Client{T: t}
	ep := testsupport.BaseURL(mcpURL)
	cl.Initialize(ep, nil)
	r := cl.Request(ep, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "through the image"}})
	if !strings.Contains(string(r.Body), "through the image") {
		t.Fatalf("tools/call through the container: %d %s", r.Status, r.Body)
	}
	if code, body := httpGet(t, adminURL+"/metrics"); code != http.StatusOK || !strings.Contains(body, `mcpgw_build_info{commit=`) || !strings.Contains(body, version) {
		t.Errorf("admin /metrics: %d, want mcpgw_build_info naming %s", code, version)
	}
	if code, _ := httpGet(t, mcpURL+"/metrics"); code != http.StatusNotFound {
		t.Errorf("the MCP port served /metrics: %d", code)
	}
}

func TestImage_StdioRunsAnNpxServer(t *testing.T) {
	tags := imageTags(t, "MCPGW_IMAGE_STDIO")
	version := os.Getenv("MCPGW_IMAGE_VERSION")
	whole := os.Getenv("MCPGW_IMAGE_STDIO_TARGET") == "stdio"
	for _, tag := range tags {
		cfg := inspectImage(t, tag)
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", tag, cfg.Config.User)
		}
		want := []string{"usr/local/bin/gateway", "usr/local/bin/node", "usr/local/bin/npx", "usr/local/bin/npm"}
		if whole {
			checkLabels(t, tag, cfg.Config.Labels, version)
			want = append(want, "usr/local/bin/uv", "usr/local/bin/uvx", "usr/local/bin/python3")
		} else {
			t.Logf("%s is stage stdio-node on stand-in bases: uv and its labels are not checked", tag)
		}
		files := imageFiles(t, tag)
		for _, f := range want {
			if !files[f] {
				t.Errorf("%s lacks /%s", tag, f)
			}
		}
	}
	tag := tags[slices.IndexFunc(tags, func(s string) bool { return archOf(s) == runtime.GOARCH })]
	canRun(t, tag, version)
	// The npm package is the one the interop tests use, mounted with its
	// node_modules as the working directory: npx finds it there and
	// fetches nothing (NPM_CONFIG_OFFLINE), as an image with packages
	// baked in would run it.
	interop, err := filepath.Abs(repoPath(".cache", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(interop, "node_modules", "@modelcontextprotocol", "server-everything")); err != nil {
		t.Fatalf("no server-everything in .cache/interop (scripts/npm-fixtures.sh installs it): %v", err)
	}
	config := writeImageConfig(t, `      everything:
        transport: stdio
        command: npx
        args: ["-y", "@modelcontextprotocol/server-everything", "stdio"]
        env: {NPM_CONFIG_OFFLINE: "true"}
        timeout: 60s
        pool: {min: 1, max: 1}
`)
	mcpURL, _ := startContainer(t, tag, config, "-v", interop+":/opt/interop:ro", "-w", "/opt/interop")
	cl := &testsupport.Client{T: t}
	ep := testsupport.BaseURL(mcpURL)
	cl.Initialize(ep, nil)
	r := cl.Request(ep, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"message": "npx in the image"}})
	if !strings.Contains(string(r.Body), "npx in the image") {
		t.Fatalf("tools/call of an npx stdio backend in the container: %d %s", r.Status, r.Body)
	}
}
