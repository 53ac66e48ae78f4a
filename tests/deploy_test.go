package tests

// Deployment artifacts: infra/Dockerfile, infra/k8s/, localdev/. There is
// no container engine or cluster in CI, so the files are parsed and checked
// for what makes horizontal scaling without affinity work (same config and
// Redis everywhere, probes on /readyz and /healthz, no sticky balancing,
// unbuffered SSE), and the topology localdev/docker-compose.yml describes
// is run with the binaries directly.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/gateway/handler/config"
	"github.com/mcpgw/gateway/tests/testsupport"
)

// repoPath is a path in the repository; tests run in tests/.
func repoPath(parts ...string) string {
	return filepath.Join(append([]string{".."}, parts...)...)
}

func mustRead(t *testing.T, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---------------------------------------------------------------------------
// localdev/docker-compose.yml and localdev/nginx.conf
// ---------------------------------------------------------------------------

// composeFile is the part of the compose schema the checks need, in the
// forms localdev/docker-compose.yml uses (list commands, map environments).
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
		Target     string `yaml:"target"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var f composeFile
	if err := yaml.Unmarshal(mustRead(t, "localdev", "docker-compose.yml"), &f); err != nil {
		t.Fatalf("localdev/docker-compose.yml: %v", err)
	}
	return f
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) (string, bool) {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return "", false
	}
	return args[i+1], true
}

// composeServicesByTarget names the services (gateway replicas, backends)
// that build the given infra/Dockerfile target, sorted.
func composeServicesByTarget(f composeFile, target string) []string {
	var names []string
	for name, s := range f.Services {
		if s.Build != nil && s.Build.Target == target {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func TestDeploy_ComposeTopology(t *testing.T) {
	f := loadCompose(t)
	stages := dockerStageNames(t)

	// Redis, without persistence.
	redisSvc, ok := f.Services["redis"]
	if !ok || !strings.HasPrefix(redisSvc.Image, "redis:") {
		t.Fatalf("service redis: %+v, want a redis:* image", redisSvc)
	}
	if v, ok := flagValue(redisSvc.Command, "--save"); !ok || v != "" {
		t.Errorf("redis command %q: want --save \"\" (no persistence)", redisSvc.Command)
	}
	if v, _ := flagValue(redisSvc.Command, "--appendonly"); v != "no" {
		t.Errorf("redis command %q: want --appendonly no", redisSvc.Command)
	}

	// At least two gateway replicas, identical but for their name.
	gateways := composeServicesByTarget(f, "gateway")
	if len(gateways) < 2 || !slices.Contains(gateways, "gateway-1") || !slices.Contains(gateways, "gateway-2") {
		t.Fatalf("gateway services %q: want gateway-1, gateway-2 (build target gateway)", gateways)
	}
	first := f.Services[gateways[0]]
	for _, name := range gateways {
		g := f.Services[name]
		if !reflect.DeepEqual(g, first) {
			t.Errorf("%s differs from %s: replicas must run the same image, config and Redis\n%+v\n%+v", name, gateways[0], g, first)
		}
		if v, _ := flagValue(g.Command, "--config"); v != "/etc/mcpgw/gateway.yaml" {
			t.Errorf("%s command %q: want --config /etc/mcpgw/gateway.yaml", name, g.Command)
		}
		if v, _ := flagValue(g.Command, "--redis-url"); v != "redis://redis:6379" {
			t.Errorf("%s command %q: want --redis-url redis://redis:6379", name, g.Command)
		}
		if !hasMount(g.Volumes, "./gateway.yaml", "/etc/mcpgw/gateway.yaml") {
			t.Errorf("%s volumes %q: want ./gateway.yaml mounted at /etc/mcpgw/gateway.yaml", name, g.Volumes)
		}
		if g.DependsOn["redis"].Condition != "service_started" {
			t.Errorf("%s depends_on %+v: want redis with condition service_started", name, g.DependsOn)
		}
		checkComposeBuild(t, name, g, stages)
	}

	// The proxy: nginx with our config, published on 8080, started after
	// the gateways (nginx resolves upstream names at start-up).
	proxy, ok := f.Services["proxy"]
	if !ok || !strings.HasPrefix(proxy.Image, "nginx:") || !strings.Contains(proxy.Image, "alpine") {
		t.Fatalf("service proxy: %+v, want an nginx:*alpine image", proxy)
	}
	if !hasMount(proxy.Volumes, "./nginx.conf", "/etc/nginx/nginx.conf") {
		t.Errorf("proxy volumes %q: want ./nginx.conf mounted at /etc/nginx/nginx.conf", proxy.Volumes)
	}
	if !slices.ContainsFunc(proxy.Ports, func(p string) bool { return strings.HasSuffix(p, "8080:8080") }) {
		t.Errorf("proxy ports %q: want 8080 published", proxy.Ports)
	}
	for _, g := range gateways {
		if _, ok := proxy.DependsOn[g]; !ok {
			t.Errorf("proxy does not depend on %s", g)
		}
	}

	// Two example backends on :9001.
	backends := composeServicesByTarget(f, "demo-backend")
	if !reflect.DeepEqual(backends, []string{"backend-one", "backend-two"}) {
		t.Fatalf("demo-backend services %q, want backend-one and backend-two", backends)
	}
	for _, name := range backends {
		b := f.Services[name]
		if v, _ := flagValue(b.Command, "--listen"); v != ":9001" {
			t.Errorf("%s command %q: want --listen :9001", name, b.Command)
		}
		checkComposeBuild(t, name, b, stages)
	}

	// The gateway config reaches the backends by their service names.
	cfg := parseConfigFile(t, "localdev", "gateway.yaml")
	for _, vh := range cfg.VirtualHosts {
		for key, b := range vh.Backends {
			u, err := url.Parse(b.URL)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(backends, u.Hostname()) || u.Port() != "9001" {
				t.Errorf("localdev/gateway.yaml backend %s: %s is not a compose backend service on :9001", key, b.URL)
			}
		}
	}

	// The proxy balances over exactly the gateway services.
	upstream := nginxUpstreamServers(t)
	var want []string
	for _, g := range gateways {
		want = append(want, g+":8080")
	}
	if !reflect.DeepEqual(upstream, want) {
		t.Errorf("nginx upstream servers %q, want every gateway replica %q", upstream, want)
	}
}

// hasMount reports whether volumes mount src at dst (read-only or not).
func hasMount(volumes []string, src, dst string) bool {
	return slices.ContainsFunc(volumes, func(v string) bool {
		parts := strings.Split(v, ":")
		return len(parts) >= 2 && parts[0] == src && parts[1] == dst
	})
}

// checkComposeBuild checks that a service builds from the repository with
// infra/Dockerfile and a target that the Dockerfile defines.
func checkComposeBuild(t *testing.T, name string, s composeService, stages []string) {
	t.Helper()
	b := s.Build
	if b == nil {
		t.Errorf("%s has no build section", name)
		return
	}
	ctxDir := filepath.Join(repoPath("localdev"), b.Context)
	if _, err := os.Stat(filepath.Join(ctxDir, "go.mod")); err != nil {
		t.Errorf("%s build context %q is not the repository root: %v", name, b.Context, err)
	}
	if b.Dockerfile != "infra/Dockerfile" {
		t.Errorf("%s dockerfile %q, want infra/Dockerfile", name, b.Dockerfile)
	}
	if !slices.Contains(stages, b.Target) {
		t.Errorf("%s build target %q is not a stage of infra/Dockerfile (%q)", name, b.Target, stages)
	}
}

// nginxDirective is one directive of an nginx config, with its block.
type nginxDirective struct {
	name  string
	args  []string
	block []*nginxDirective
}

// parseNginx parses nginx's config syntax: words and quoted strings,
// directives ended by ';' or by a '{ ... }' block, '#' comments.
func parseNginx(src string) ([]*nginxDirective, error) {
	var tokens []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '{' || c == '}' || c == ';':
			tokens = append(tokens, string(c))
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, errors.New("unterminated quoted string")
			}
			tokens = append(tokens, src[i+1:j])
			i = j + 1
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n{};", rune(src[j])) {
				j++
			}
			tokens = append(tokens, src[i:j])
			i = j
		}
	}
	pos := 0
	var parse func(depth int) ([]*nginxDirective, error)
	parse = func(depth int) ([]*nginxDirective, error) {
		var out []*nginxDirective
		var cur *nginxDirective
		for pos < len(tokens) {
			tok := tokens[pos]
			pos++
			switch tok {
			case ";":
				if cur == nil {
					return nil, errors.New("empty directive")
				}
				out, cur = append(out, cur), nil
			case "{":
				if cur == nil {
					return nil, errors.New("block without a directive")
				}
				block, err := parse(depth + 1)
				if err != nil {
					return nil, err
				}
				cur.block = block
				out, cur = append(out, cur), nil
			case "}":
				if depth == 0 || cur != nil {
					return nil, errors.New("unexpected '}'")
				}
				return out, nil
			default:
				if cur == nil {
					cur = &nginxDirective{name: tok}
				} else {
					cur.args = append(cur.args, tok)
				}
			}
		}
		if depth > 0 || cur != nil {
			return nil, errors.New("unexpected end of file")
		}
		return out, nil
	}
	return parse(0)
}

// walkNginx calls fn for every directive, depth first, with its parents.
func walkNginx(ds []*nginxDirective, parents []*nginxDirective, fn func(d *nginxDirective, parents []*nginxDirective)) {
	for _, d := range ds {
		fn(d, parents)
		walkNginx(d.block, append(slices.Clone(parents), d), fn)
	}
}

func loadNginx(t *testing.T) []*nginxDirective {
	t.Helper()
	ds, err := parseNginx(string(mustRead(t, "localdev", "nginx.conf")))
	if err != nil {
		t.Fatalf("localdev/nginx.conf: %v", err)
	}
	return ds
}

// nginxUpstreamServers returns the servers of the upstream that the
// proxy_pass directives use, failing the test on anything that would give
// a session affinity to one replica.
func nginxUpstreamServers(t *testing.T) []string {
	t.Helper()
	ds := loadNginx(t)
	upstreams := map[string]*nginxDirective{}
	var passes []string
	walkNginx(ds, nil, func(d *nginxDirective, _ []*nginxDirective) {
		switch d.name {
		case "upstream":
			upstreams[d.args[0]] = d
		case "proxy_pass":
			passes = append(passes, d.args[0])
		case "ip_hash", "hash", "sticky":
			t.Errorf("nginx.conf has %s: the gateway needs no session affinity", strings.Join(append([]string{d.name}, d.args...), " "))
		}
	})
	if len(passes) == 0 {
		t.Fatal("nginx.conf has no proxy_pass")
	}
	var servers []string
	for _, p := range passes {
		name := strings.TrimPrefix(p, "http://")
		up, ok := upstreams[name]
		if !ok {
			t.Fatalf("proxy_pass %s: no upstream %q", p, name)
		}
		servers = servers[:0]
		for _, d := range up.block {
			if d.name == "server" {
				servers = append(servers, d.args[0])
			}
		}
	}
	slices.Sort(servers)
	return servers
}

func TestDeploy_NginxRoundRobinForSSE(t *testing.T) {
	ds := loadNginx(t)
	if servers := nginxUpstreamServers(t); len(servers) < 2 {
		t.Fatalf("upstream servers %q: want at least two replicas", servers)
	}
	// Every location that proxies must stream SSE and keep idle streams.
	found := 0
	walkNginx(ds, nil, func(d *nginxDirective, parents []*nginxDirective) {
		if d.name != "location" {
			return
		}
		settings := map[string][]string{}
		for _, p := range append(slices.Clone(parents), d) { // inherited from http and server
			for _, c := range p.block {
				if len(c.block) == 0 {
					settings[c.name] = c.args
				}
			}
		}
		if settings["proxy_pass"] == nil {
			return
		}
		found++
		where := "location " + strings.Join(d.args, " ")
		if v := settings["proxy_buffering"]; !slices.Equal(v, []string{"off"}) {
			t.Errorf("%s: proxy_buffering %q, want off (SSE events must not wait in a buffer)", where, v)
		}
		if v := settings["proxy_read_timeout"]; len(v) != 1 || nginxSeconds(t, v[0]) < 600 {
			t.Errorf("%s: proxy_read_timeout %q, want at least 10m (idle GET streams)", where, v)
		}
		if v := settings["proxy_http_version"]; !slices.Equal(v, []string{"1.1"}) {
			t.Errorf("%s: proxy_http_version %q, want 1.1 (keep-alive to the replicas)", where, v)
		}
		if v := settings["proxy_set_header"]; v == nil {
			t.Errorf("%s: no proxy_set_header", where)
		}
	})
	if found == 0 {
		t.Fatal("no location with proxy_pass")
	}
	// proxy_set_header repeats, so look at all of them.
	headers := map[string]string{}
	walkNginx(ds, nil, func(d *nginxDirective, _ []*nginxDirective) {
		if d.name == "proxy_set_header" && len(d.args) == 2 {
			headers[strings.ToLower(d.args[0])] = d.args[1]
		}
	})
	if v, ok := headers["connection"]; !ok || v != "" {
		t.Errorf(`proxy_set_header Connection %q, want "" (upstream keep-alive)`, v)
	}
	if v := headers["host"]; v != "$http_host" && v != "$host" {
		t.Errorf("proxy_set_header Host %q, want the client's Host (the gateway checks allowed_hosts)", v)
	}
}

// nginxSeconds converts an nginx time ("90", "90s", "10m", "1h") to seconds.
func nginxSeconds(t *testing.T, v string) int {
	t.Helper()
	units := map[byte]int{'s': 1, 'm': 60, 'h': 3600, 'd': 86400}
	mult := 1
	if u, ok := units[v[len(v)-1]]; ok {
		mult, v = u, v[:len(v)-1]
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("nginx time %q: %v", v, err)
	}
	return n * mult
}

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

// ---------------------------------------------------------------------------
// infra/k8s
// ---------------------------------------------------------------------------

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec       yaml.Node         `yaml:"spec"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	// Kustomization
	Resources []string    `yaml:"resources"`
	Images    []kustImage `yaml:"images"`

	file string
}

type kustImage struct {
	Name string `yaml:"name"`
}

type hpaMetric struct {
	Resource struct {
		Name string `yaml:"name"`
	} `yaml:"resource"`
}

type k8sSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type k8sContainer struct {
	Name           string    `yaml:"name"`
	Image          string    `yaml:"image"`
	Args           []string  `yaml:"args"`
	Ports          []k8sPort `yaml:"ports"`
	Env            []k8sEnv  `yaml:"env"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool `yaml:"privileged"`
	} `yaml:"securityContext"`
	VolumeMounts []k8sMount `yaml:"volumeMounts"`
}

type k8sPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type k8sEnv struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type k8sMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	SubPath   string `yaml:"subPath"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sDeploymentSpec struct {
	Replicas int         `yaml:"replicas"`
	Selector k8sSelector `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			SecurityContext struct {
				RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				RunAsUser    *int  `yaml:"runAsUser"`
			} `yaml:"securityContext"`
			Affinity                  map[string]any `yaml:"affinity"`
			TopologySpreadConstraints []struct {
				TopologyKey   string      `yaml:"topologyKey"`
				LabelSelector k8sSelector `yaml:"labelSelector"`
			} `yaml:"topologySpreadConstraints"`
			Containers []k8sContainer `yaml:"containers"`
			Volumes    []struct {
				Name      string `yaml:"name"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// loadK8s decodes every document of every YAML file in infra/k8s.
func loadK8s(t *testing.T) []*k8sObject {
	t.Helper()
	files, err := filepath.Glob(repoPath("infra", "k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in infra/k8s (%v)", err)
	}
	var objs []*k8sObject
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			o := &k8sObject{file: filepath.Base(f)}
			err := dec.Decode(o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" {
				continue // an empty document
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// k8sOne returns the only object of kind, decoding its spec into spec.
func k8sOne(t *testing.T, objs []*k8sObject, kind string, spec any) *k8sObject {
	t.Helper()
	var found []*k8sObject
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s in infra/k8s, want 1", len(found), kind)
	}
	if spec != nil {
		if err := found[0].Spec.Decode(spec); err != nil {
			t.Fatalf("%s %s spec: %v", kind, found[0].Metadata.Name, err)
		}
	}
	return found[0]
}

// selects reports whether a selector's labels are all on the pod.
func selects(sel, pod map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if pod[k] != v {
			return false
		}
	}
	return true
}

func TestDeploy_KubernetesManifests(t *testing.T) {
	objs := loadK8s(t)

	var dep k8sDeploymentSpec
	depObj := k8sOne(t, objs, "Deployment", &dep)
	pod := dep.Template.Spec
	podLabels := dep.Template.Metadata.Labels
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the gateway alone", len(pod.Containers))
	}
	c := pod.Containers[0]
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
		ports[strconv.Itoa(p.ContainerPort)] = p.ContainerPort
	}

	var secret *k8sObject
	for _, o := range objs {
		if o.Kind == "Secret" && o.file == "secret.example.yaml" {
			secret = o
		}
	}
	if secret == nil {
		t.Fatal("want the example Secret in secret.example.yaml")
	}
	// What the container's environment holds, secrets taken from the
	// example Secret.
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = secret.StringData[e.ValueFrom.SecretKeyRef.Key]
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		}
	}

	t.Run("Deployment", func(t *testing.T) {
		if dep.Replicas < 2 {
			t.Errorf("Deployment replicas %d, want at least 2", dep.Replicas)
		}
		if !selects(dep.Selector.MatchLabels, podLabels) {
			t.Errorf("Deployment selector %v does not select its pods %v", dep.Selector.MatchLabels, podLabels)
		}
		if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
			t.Error("pod securityContext.runAsNonRoot is not true")
		}
		if len(pod.Affinity) != 0 {
			t.Errorf("pod affinity %v: replicas are interchangeable, none is needed", pod.Affinity)
		}
		if len(pod.TopologySpreadConstraints) == 0 {
			t.Error("no topologySpreadConstraints")
		}
		for _, c := range pod.TopologySpreadConstraints {
			if !selects(c.LabelSelector.MatchLabels, podLabels) {
				t.Errorf("topology spread on %s does not select the gateway pods", c.TopologyKey)
			}
		}
		if v, _ := flagValue(c.Args, "--config"); v != "/etc/mcpgw/gateway.yaml" {
			t.Errorf("container args %q: want --config /etc/mcpgw/gateway.yaml", c.Args)
		}
		if !slices.ContainsFunc(c.Ports, func(p k8sPort) bool { return p.ContainerPort == 8080 }) {
			t.Errorf("container ports %+v: want 8080 (the image's EXPOSE and MCPGW_LISTEN)", c.Ports)
		}
		for name, tc := range map[string]struct {
			probe *k8sProbe
			path  string
		}{"readinessProbe": {c.ReadinessProbe, "/readyz"}, "livenessProbe": {c.LivenessProbe, "/healthz"}} {
			if tc.probe == nil || tc.probe.HTTPGet == nil {
				t.Errorf("%s: want an httpGet probe on %s", name, tc.path)
				continue
			}
			if tc.probe.HTTPGet.Path != tc.path {
				t.Errorf("%s path %q, want %s", name, tc.probe.HTTPGet.Path, tc.path)
			}
			if _, ok := ports[fmt.Sprint(tc.probe.HTTPGet.Port)]; !ok {
				t.Errorf("%s port %v is not a container port", name, tc.probe.HTTPGet.Port)
			}
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
			t.Errorf("resources %+v: want cpu and memory requests (the HPA scales on CPU) and a memory limit", c.Resources)
		}
		sc := c.SecurityContext
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("container allowPrivilegeEscalation is not false")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Error("container readOnlyRootFilesystem is not true")
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Error("container is privileged")
		}

		// The user the image runs as.
		if u := pod.SecurityContext.RunAsUser; u != nil {
			final := parseDockerfile(t)
			if user, _ := final[len(final)-1].last("USER"); !strings.HasPrefix(user, strconv.Itoa(*u)+":") && user != strconv.Itoa(*u) {
				t.Errorf("runAsUser %d but the image's USER is %q", *u, user)
			}
		}
	})
	t.Run("Secret", func(t *testing.T) {
		// MCPGW_REDIS_URL from a secretKeyRef; every referenced key present
		// in the example Secret, whose values are obviously fake.
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if _, ok := secret.StringData[ref.Key]; ref.Name != secret.Metadata.Name || !ok {
				t.Errorf("env %s: secretKeyRef %s/%s is not in secret.example.yaml", e.Name, ref.Name, ref.Key)
			}
		}
		redisFromSecret := slices.ContainsFunc(c.Env, func(e k8sEnv) bool {
			return e.Name == "MCPGW_REDIS_URL" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		})
		if !redisFromSecret {
			t.Error("MCPGW_REDIS_URL does not come from a secretKeyRef")
		}
		for k, v := range secret.StringData {
			if !strings.Contains(strings.ToUpper(v), "CHANGE-ME") {
				t.Errorf("secret.example.yaml %s = %q: want an obviously fake placeholder (CHANGE-ME)", k, v)
			}
		}
	})
	t.Run("ConfigMap", func(t *testing.T) {
		// The ConfigMap is mounted as a directory at /etc/mcpgw (subPath mounts
		// never see updates) and holds a gateway.yaml that the gateway accepts
		// with exactly the environment the Deployment gives it.
		cm := k8sOne(t, objs, "ConfigMap", nil)
		var volName string
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == cm.Metadata.Name {
				volName = v.Name
			}
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m k8sMount) bool {
			return m.Name == volName && m.MountPath == "/etc/mcpgw" && m.SubPath == ""
		}) {
			t.Errorf("ConfigMap %s is not mounted at /etc/mcpgw (without subPath): mounts %+v", cm.Metadata.Name, c.VolumeMounts)
		}
		for _, name := range []string{"MCPGW_JWT_SECRET", "MCPGW_CURSOR_SECRET"} {
			// Whatever the test process has must not hide a missing variable.
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
		for k, v := range env {
			t.Setenv(k, v)
		}
		cfg, err := config.Parse([]byte(cm.Data["gateway.yaml"]), "configmap.yaml:gateway.yaml")
		if err != nil {
			t.Fatalf("the ConfigMap's gateway.yaml: %v", err)
		}
		if cfg.Auth.Mode != config.ModeJWT || len(cfg.CursorSecret) == 0 || len(cfg.VirtualHosts) == 0 {
			t.Errorf("ConfigMap config: auth %s, cursor secret %t, %d vhosts; want jwt, a shared cursor secret, vhosts",
				cfg.Auth.Mode, len(cfg.CursorSecret) > 0, len(cfg.VirtualHosts))
		}
	})
	t.Run("Service", func(t *testing.T) {
		// Service: no affinity, in front of the gateway pods' port.
		var svc struct {
			Type            string            `yaml:"type"`
			SessionAffinity string            `yaml:"sessionAffinity"`
			Selector        map[string]string `yaml:"selector"`
			Ports           []struct {
				TargetPort any `yaml:"targetPort"`
			} `yaml:"ports"`
		}
		k8sOne(t, objs, "Service", &svc)
		if svc.SessionAffinity != "None" {
			t.Errorf("Service sessionAffinity %q, want None", svc.SessionAffinity)
		}
		if svc.Type != "" && svc.Type != "ClusterIP" {
			t.Errorf("Service type %q, want ClusterIP", svc.Type)
		}
		if !selects(svc.Selector, podLabels) {
			t.Errorf("Service selector %v does not select the gateway pods %v", svc.Selector, podLabels)
		}
		for _, p := range svc.Ports {
			if _, ok := ports[fmt.Sprint(p.TargetPort)]; !ok {
				t.Errorf("Service targetPort %v is not a container port", p.TargetPort)
			}
		}
	})
	t.Run("PodDisruptionBudget", func(t *testing.T) {
		// PodDisruptionBudget over the same pods.
		var pdb struct {
			Selector       k8sSelector `yaml:"selector"`
			MaxUnavailable any         `yaml:"maxUnavailable"`
			MinAvailable   any         `yaml:"minAvailable"`
		}
		k8sOne(t, objs, "PodDisruptionBudget", &pdb)
		if !selects(pdb.Selector.MatchLabels, podLabels) || (pdb.MaxUnavailable == nil && pdb.MinAvailable == nil) {
			t.Errorf("PodDisruptionBudget %+v: want a budget over the gateway pods", pdb)
		}
	})
	t.Run("HorizontalPodAutoscaler", func(t *testing.T) {
		// HPA on CPU for this Deployment.
		var hpa struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas int         `yaml:"minReplicas"`
			MaxReplicas int         `yaml:"maxReplicas"`
			Metrics     []hpaMetric `yaml:"metrics"`
		}
		k8sOne(t, objs, "HorizontalPodAutoscaler", &hpa)
		if hpa.ScaleTargetRef.Kind != "Deployment" || hpa.ScaleTargetRef.Name != depObj.Metadata.Name {
			t.Errorf("HPA scales %+v, want Deployment %s", hpa.ScaleTargetRef, depObj.Metadata.Name)
		}
		if hpa.MinReplicas < 2 || hpa.MaxReplicas < hpa.MinReplicas {
			t.Errorf("HPA replicas %d..%d, want a minimum of at least 2", hpa.MinReplicas, hpa.MaxReplicas)
		}
		if !slices.ContainsFunc(hpa.Metrics, func(m hpaMetric) bool { return m.Resource.Name == "cpu" }) {
			t.Error("HPA does not scale on cpu")
		}
	})
	t.Run("Kustomization", func(t *testing.T) {
		// kustomization.yaml lists every manifest but the example Secret.
		kust := k8sOne(t, objs, "Kustomization", nil)
		var want []string
		for _, o := range objs {
			if o.file != "kustomization.yaml" && o.file != "secret.example.yaml" && !slices.Contains(want, o.file) {
				want = append(want, o.file)
			}
		}
		got := slices.Clone(kust.Resources)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("kustomization resources %q, want %q (not the example Secret, which would overwrite the real one)", got, want)
		}
		image, _, _ := strings.Cut(c.Image, ":")
		if !slices.ContainsFunc(kust.Images, func(i kustImage) bool { return i.Name == image }) {
			t.Errorf("kustomization images do not set the container image %s", image)
		}

		// With kubectl at hand, kustomize must build the whole set.
		if kubectl, err := exec.LookPath("kubectl"); err == nil {
			if out, err := exec.Command(kubectl, "kustomize", repoPath("infra", "k8s")).CombinedOutput(); err != nil {
				t.Errorf("kubectl kustomize infra/k8s: %v\n%s", err, out)
			}
		} else {
			t.Log("kubectl not on PATH: kustomize build not checked")
		}
	})
}

// ---------------------------------------------------------------------------
// localdev configs
// ---------------------------------------------------------------------------

// parseConfigFile runs the gateway's own config parser on a repository file.
func parseConfigFile(t *testing.T, parts ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(mustRead(t, parts...), repoPath(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestDeploy_LocaldevConfigs(t *testing.T) {
	t.Setenv("MCPGW_JWT_SECRET", "localdev-jwt-secret-0123456789abcdef0123")
	for file, mode := range map[string]string{"gateway.yaml": config.ModeNone, "gateway.jwt.yaml": config.ModeJWT} {
		cfg := parseConfigFile(t, "localdev", file)
		if cfg.Auth.Mode != mode {
			t.Errorf("%s: auth %s, want %s", file, cfg.Auth.Mode, mode)
		}
		if !slices.Contains(cfg.AllowedHosts, "localhost") {
			t.Errorf("%s: allowed_hosts %q lacks localhost", file, cfg.AllowedHosts)
		}
		demo := cfg.VirtualHosts["demo"]
		if demo == nil || len(demo.Backends) != 2 || demo.Backends["gateway-one"] == nil || demo.Backends["gateway-two"] == nil {
			t.Errorf("%s: want a demo vhost with backends gateway-one and gateway-two", file)
		}
	}
	// The two files differ in auth only.
	plain := parseConfigFile(t, "localdev", "gateway.yaml")
	jwt := parseConfigFile(t, "localdev", "gateway.jwt.yaml")
	plain.Source, jwt.Source, plain.Auth, jwt.Auth = "", "", config.Auth{}, config.Auth{}
	if !reflect.DeepEqual(plain, jwt) {
		t.Error("localdev/gateway.jwt.yaml differs from gateway.yaml in more than auth")
	}
}

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
	return strings.Count(out, "msg=request method=POST path=/servers/demo/mcp")
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
