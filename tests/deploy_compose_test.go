package tests

// localdev/docker-compose.yml and localdev/nginx.conf: the local topology
// of two replicas behind a round-robin proxy with no affinity.

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

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
