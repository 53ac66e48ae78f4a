package tests

// infra/k8s: manifests for horizontal scaling without affinity.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/gateway/internal/config"
)

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
	t.Run("MemoryHeadroom", func(t *testing.T) {
		// GOMEMLIMIT leaves the container limit headroom for what the Go
		// heap does not count: between 70% and 95% of limits.memory.
		limit := k8sBytes(t, c.Resources.Limits["memory"])
		i := slices.IndexFunc(c.Env, func(e k8sEnv) bool { return e.Name == "GOMEMLIMIT" })
		if i < 0 || c.Env[i].Value == "" {
			t.Fatal("no GOMEMLIMIT value on the gateway container")
		}
		soft := goMemBytes(t, c.Env[i].Value)
		if ratio := float64(soft) / float64(limit); ratio < 0.70 || ratio > 0.95 {
			t.Errorf("GOMEMLIMIT %s is %.0f%% of limits.memory %s, want 70-95%%", c.Env[i].Value, ratio*100, c.Resources.Limits["memory"])
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

// k8sBytes reads a Kubernetes memory quantity with a binary suffix (512Mi).
func k8sBytes(t *testing.T, q string) int64 {
	t.Helper()
	for suffix, mult := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(q, suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err == nil {
				return v * mult
			}
		}
	}
	t.Fatalf("memory quantity %q: want a number with Ki, Mi or Gi", q)
	return 0
}

// goMemBytes reads a GOMEMLIMIT value with a unit (460MiB).
func goMemBytes(t *testing.T, v string) int64 {
	t.Helper()
	for suffix, mult := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			b, err := strconv.ParseInt(n, 10, 64)
			if err == nil {
				return b * mult
			}
		}
	}
	t.Fatalf("GOMEMLIMIT %q: want a number with KiB, MiB or GiB", v)
	return 0
}
