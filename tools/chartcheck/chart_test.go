package chartcheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// chartDir is charts/mcpgw; the test runs in tools/chartcheck.
var chartDir = filepath.Join("..", "..", "charts", "mcpgw")

// bins holds helm and the gateway, built once by TestMain.
var bins struct{ helm, gateway string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chartcheck-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bins.helm, bins.gateway = filepath.Join(dir, "helm"), filepath.Join(dir, "gateway")
		for _, b := range []struct{ out, pkg, in string }{
			{bins.helm, "helm.sh/helm/v4/cmd/helm", "."},
			{bins.gateway, "./cmd/gateway", filepath.Join("..", "..")},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.in
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "chartcheck: go build %s: %v\n%s", b.pkg, err, out)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// examples are the values files CI renders: the defaults ("") and each
// of charts/mcpgw/ci.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("values examples in %s/ci: %v %v", chartDir, files, err)
	}
	return append([]string{""}, files...)
}

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bins.helm, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("helm %s: %v: %s%s", strings.Join(args, " "), err, errOut.String(), out.String())
	}
	return out.String(), nil
}

func valuesArgs(file string, set ...string) []string {
	var args []string
	if file != "" {
		args = append(args, "-f", file)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return args
}

// render is helm template of the chart with a values file (and --set
// pairs), decoded strictly.
func render(t *testing.T, file string, set ...string) []runtime.Object {
	t.Helper()
	out, err := helm(t, append([]string{"template", "mcpgw", chartDir, "--namespace", "mcpgw"}, valuesArgs(file, set...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode([]byte(out))
	if err != nil {
		t.Fatalf("%s: %v", name(file), err)
	}
	return objs
}

func name(file string) string {
	if file == "" {
		return "default values"
	}
	return filepath.Base(file)
}

func TestChart_LintStrict(t *testing.T) {
	for _, f := range examples(t) {
		out, err := helm(t, append([]string{"lint", "--strict", chartDir}, valuesArgs(f)...)...)
		if err != nil {
			t.Errorf("%s: %v", name(f), err)
		}
		if strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]") {
			t.Errorf("%s: helm lint --strict:\n%s", name(f), out)
		}
	}
}

// rendered are the objects of one render, by kind.
type rendered struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	ingresses   []*networkingv1.Ingress
	routes      []*gatewayv1.HTTPRoute
	policies    []*networkingv1.NetworkPolicy
	monitors    []*monitoringv1.ServiceMonitor
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
}

func sortObjects(t *testing.T, objs []runtime.Object) rendered {
	t.Helper()
	var r rendered
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			r.deployments = append(r.deployments, v)
		case *corev1.Service:
			r.services = append(r.services, v)
		case *corev1.ConfigMap:
			r.configMaps = append(r.configMaps, v)
		case *networkingv1.Ingress:
			r.ingresses = append(r.ingresses, v)
		case *gatewayv1.HTTPRoute:
			r.routes = append(r.routes, v)
		case *networkingv1.NetworkPolicy:
			r.policies = append(r.policies, v)
		case *monitoringv1.ServiceMonitor:
			r.monitors = append(r.monitors, v)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, v)
		default:
			t.Errorf("rendered a %T the checks do not cover", o)
		}
	}
	return r
}

// gateway is the gateway's Deployment and container.
func (r rendered) gateway(t *testing.T) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	for _, d := range r.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == "gateway" {
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%s: %d containers, want the gateway alone", d.Name, len(d.Spec.Template.Spec.Containers))
			}
			return d, d.Spec.Template.Spec.Containers[0]
		}
	}
	t.Fatal("no gateway Deployment")
	return nil, corev1.Container{}
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func portOf(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container has no port %q", name)
	return 0
}

func TestChart_EveryExampleRendersToValidHardenedObjects(t *testing.T) {
	for _, f := range examples(t) {
		t.Run(name(f), func(t *testing.T) {
			r := sortObjects(t, render(t, f))
			checkDeployment(t, r)
			checkRouting(t, r)
			checkConfig(t, r)
			if len(r.pdbs) != 1 {
				t.Errorf("%d PodDisruptionBudgets, want 1", len(r.pdbs))
			}
		})
	}
}

func checkDeployment(t *testing.T, r rendered) {
	t.Helper()
	d, c := r.gateway(t)
	pod := d.Spec.Template.Spec
	admin := portOf(t, c, "admin")
	if v, _ := envValue(c, "MCPGW_ADMIN_LISTEN"); v != fmt.Sprintf(":%d", admin) {
		t.Errorf("MCPGW_ADMIN_LISTEN %q, want :%d (the admin port)", v, admin)
	}
	if v, _ := envValue(c, "MCPGW_LISTEN"); v != fmt.Sprintf(":%d", portOf(t, c, "http")) {
		t.Errorf("MCPGW_LISTEN %q, want the http port", v)
	}
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.ReadinessProbe, "/readyz"}, {c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "admin" {
			t.Errorf("probe %s: %+v, want an httpGet on the admin port (the MCP port does not serve it)", p.path, p.probe)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v: want a read-only root and no privilege escalation", sc)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot with a non-zero uid", psc)
	}
	if len(pod.TopologySpreadConstraints) == 0 {
		t.Error("no topologySpreadConstraints")
	}
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v: want a memory limit and a CPU request", c.Resources)
	}
	if v, _ := envValue(c, "GOMEMLIMIT"); ok {
		q, err := resource.ParseQuantity(strings.TrimSuffix(v, "B"))
		if err != nil || q.Cmp(limit) >= 0 || q.Value() < limit.Value()*7/10 {
			t.Errorf("GOMEMLIMIT %q with limits.memory %s: want 70-100%% of the limit", v, limit.String())
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["config"] != "/etc/mcpgw" || mounts["tmp"] != "/tmp" {
		t.Errorf("mounts %v: want config at /etc/mcpgw and a writable /tmp", mounts)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token; the gateway never calls the API")
	}
	if _, hasRedis := envValue(c, "MCPGW_REDIS_URL"); !hasRedis && !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "MCPGW_REDIS_URL" }) {
		if len(r.hpas) > 0 || (d.Spec.Replicas != nil && *d.Spec.Replicas > 1) {
			t.Error("several replicas without MCPGW_REDIS_URL")
		}
	}
}

// checkRouting: Ingress and HTTPRoute reach the MCP port of the main
// Service only; the admin port is on a Service of its own that only the
// ServiceMonitor uses; the NetworkPolicy opens it to named peers alone.
func checkRouting(t *testing.T, r rendered) {
	t.Helper()
	var main, admin *corev1.Service
	for _, s := range r.services {
		switch s.Labels["app.kubernetes.io/component"] {
		case "gateway":
			main = s
		case "gateway-admin":
			admin = s
		}
	}
	if main == nil || admin == nil {
		t.Fatal("want a gateway Service and a gateway-admin Service")
	}
	if len(main.Spec.Ports) != 1 || main.Spec.Ports[0].TargetPort.String() != "http" || main.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("main Service ports %+v affinity %s: want the http port alone, no affinity", main.Spec.Ports, main.Spec.SessionAffinity)
	}
	if len(admin.Spec.Ports) != 1 || admin.Spec.Ports[0].TargetPort.String() != "admin" {
		t.Errorf("admin Service ports %+v: want the admin port alone", admin.Spec.Ports)
	}
	for _, ing := range r.ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if b := p.Backend.Service; b == nil || b.Name != main.Name || b.Port.Name != "http" {
					t.Errorf("Ingress %s path %s goes to %+v, want %s port http", ing.Name, p.Path, b, main.Name)
				}
			}
		}
	}
	for _, rt := range r.routes {
		for _, rule := range rt.Spec.Rules {
			for _, b := range rule.BackendRefs {
				if string(b.Name) != main.Name || b.Port == nil || int32(*b.Port) != main.Spec.Ports[0].Port {
					t.Errorf("HTTPRoute %s goes to %s:%v, want %s:%d", rt.Name, b.Name, b.Port, main.Name, main.Spec.Ports[0].Port)
				}
			}
		}
	}
	for _, m := range r.monitors {
		if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != "admin" || m.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "gateway-admin" {
			t.Errorf("ServiceMonitor %s: %+v, want the admin Service's admin port", m.Name, m.Spec)
		}
	}
	for _, np := range r.policies {
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.String() == "admin" && len(rule.From) == 0 {
					t.Errorf("NetworkPolicy %s opens the admin port to every peer", np.Name)
				}
			}
		}
	}
}

// checkConfig runs `gateway check` on the config the ConfigMap holds, as
// the pod would read it.
func checkConfig(t *testing.T, r rendered) {
	t.Helper()
	_, c := r.gateway(t)
	for _, cm := range r.configMaps {
		path := filepath.Join(t.TempDir(), "gateway.yaml")
		if err := os.WriteFile(path, []byte(cm.Data["gateway.yaml"]), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bins.gateway, "check", "--config", path)
		// The secrets the config names by *_env come from Secrets in the
		// cluster; any value of the right form stands in for them here.
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil:
			case e.Name == "MCPGW_REDIS_URL":
				cmd.Env = append(cmd.Env, e.Name+"=rediss://default:secret@redis.example.internal:6379/0")
			default:
				cmd.Env = append(cmd.Env, e.Name+"=chartcheck-secret-0123456789abcdef0123456789abcdef")
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("gateway check of ConfigMap %s: %v\n%s", cm.Name, err, out)
		}
	}
}

func TestChart_TrialRedisIsMarkedAndPrivate(t *testing.T) {
	r := sortObjects(t, render(t, filepath.Join(chartDir, "ci", "trial-values.yaml")))
	var redis *appsv1.Deployment
	for _, d := range r.deployments {
		if d.Spec.Template.Labels["app.kubernetes.io/component"] == "trial-redis" {
			redis = d
		}
	}
	if redis == nil || !strings.Contains(redis.Annotations["mcpgw.io/not-for-production"], "trial") {
		t.Fatalf("want the trial Redis Deployment annotated mcpgw.io/not-for-production")
	}
	_, c := r.gateway(t)
	if v, _ := envValue(c, "MCPGW_REDIS_URL"); v != "redis://mcpgw-redis:6379/0" {
		t.Errorf("MCPGW_REDIS_URL %q, want the trial Redis Service", v)
	}
	if !strings.HasSuffix(c.Image, "-stdio") {
		t.Errorf("image %s: the stdio variant's tag ends in -stdio", c.Image)
	}
	var guarded bool
	for _, np := range r.policies {
		guarded = guarded || np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"] == "trial-redis"
	}
	if !guarded {
		t.Error("no NetworkPolicy for the trial Redis")
	}
}

// Values the chart must refuse, each with a message naming the cause.
func TestChart_RefusesWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=2"}, "needs a store they share"},
		{[]string{"autoscaling.enabled=true"}, "needs a store they share"},
		{[]string{"redis.trial.enabled=true", "redis.external.existingSecret=x"}, "pick one store"},
		{[]string{"admin.port=8080"}, "admin.port must differ"},
		{[]string{"image.variant=fat"}, "variant"},
		{[]string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{[]string{"goMemLimit=lots"}, "goMemLimit"},
	} {
		_, err := helm(t, append([]string{"template", "mcpgw", chartDir}, valuesArgs("", tc.set...)...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: %v, want an error naming %q", tc.set, err, tc.want)
		}
	}
}
