package main

// The schema against real configs: every config the repository ships
// validates, and the mistakes the loader refuses (an unknown field, a
// wrong enum value, a bad duration) the schema refuses too, while the
// union shapes the loader takes (one string or a list, card: false, a
// byte size as a number or with a unit) it takes too. Validated with
// santhosh-tekuri/jsonschema, a full draft-07 implementation.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/mcpgw/gateway/internal/config"
)

func checkedInSchema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	return s
}

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("gateway.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("gateway.schema.json")
	if err != nil {
		t.Fatalf("%s does not compile: %v", schemaFile, err)
	}
	return sch
}

// instance turns YAML into the JSON value a YAML editor validates.
func instance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// shippedConfigs are the configs of the repository, by name: files, the
// gateway.yaml of the Kubernetes ConfigMap and of the chart's values,
// and every example.
func shippedConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	files := []string{"internal/config/testdata/full.yaml", "localdev/gateway.yaml", "localdev/gateway.jwt.yaml"}
	examples, _ := filepath.Glob(filepath.Join(root, "examples/*/gateway.yaml"))
	for _, e := range examples {
		rel, _ := filepath.Rel(root, e)
		files = append(files, rel)
	}
	for _, f := range files {
		out[f] = read(f)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(read("infra/k8s/configmap.yaml"), &cm); err != nil || cm.Data["gateway.yaml"] == "" {
		t.Fatalf("infra/k8s/configmap.yaml: no data.gateway.yaml (%v)", err)
	}
	out["infra/k8s/configmap.yaml data.gateway.yaml"] = []byte(cm.Data["gateway.yaml"])
	values, _ := filepath.Glob(filepath.Join(root, "charts/mcpgw/ci/*.yaml"))
	values = append(values, filepath.Join(root, "charts/mcpgw/values.yaml"))
	for _, v := range values {
		var vals struct {
			Config struct {
				Gateway yaml.Node `yaml:"gateway"`
			} `yaml:"config"`
		}
		rel, _ := filepath.Rel(root, v)
		if err := yaml.Unmarshal(read(rel), &vals); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if vals.Config.Gateway.Kind == 0 {
			continue // values that keep the chart's default config
		}
		data, err := yaml.Marshal(&vals.Config.Gateway)
		if err != nil {
			t.Fatal(err)
		}
		out[rel+" config.gateway"] = data
	}
	return out
}

func TestSchemaAcceptsShippedConfigs(t *testing.T) {
	sch := compiledSchema(t)
	configs := shippedConfigs(t)
	if len(configs) < 6 {
		t.Fatalf("only %d shipped configs found", len(configs))
	}
	for name, data := range configs {
		if err := sch.Validate(instance(t, data)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", name, err)
		}
	}
}

// exampleHeader is the first line of every example, so editors find the
// schema (docs/guide/editor-setup.md).
const exampleHeader = "# yaml-language-server: $schema=../../docs/reference/gateway.schema.json"

func TestExamplesNameTheSchema(t *testing.T) {
	examples, _ := filepath.Glob(filepath.Join(root, "examples/*/gateway.yaml"))
	for _, e := range examples {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if strings.TrimRight(first, "\r") != exampleHeader {
			t.Errorf("%s: first line %q, want %q", e, first, exampleHeader)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(e), "../../docs/reference/gateway.schema.json")); err != nil {
			t.Errorf("%s: the header's schema path does not resolve: %v", e, err)
		}
	}
}

// base is a minimal valid config the cases below change.
const base = `auth: {mode: none}
virtual_hosts:
  demo:
    backends:
      one: {url: "http://127.0.0.1:9/mcp"}
`

// TestSchemaAgreesWithLoader gives the schema and the loader the same
// configs: each case is accepted by both or refused by both.
func TestSchemaAgreesWithLoader(t *testing.T) {
	sch := compiledSchema(t)
	cases := []struct {
		name, yaml string
		valid      bool
	}{
		{"base", base, true},
		{"unknown top-level field", base + "sesion_ttl: 1h\n", false},
		{"unknown backend field", strings.Replace(base, `url:`, `timout: 5s, url:`, 1), false},
		{"unknown vhost field", base + "    acess: []\n", false},
		{"wrong session mode", strings.Replace(base, `url:`, `session: per-user, url:`, 1), false},
		{"session mode", strings.Replace(base, `url:`, `session: per-principal, url:`, 1), true},
		{"wrong transport", strings.Replace(base, `url:`, `transport: websocket, url:`, 1), false},
		{"wrong auth mode", strings.Replace(base, `mode: none`, `mode: basic`, 1), false},
		{"bad duration", base + "session_ttl: 1 hour\n", false},
		{"duration", base + "session_ttl: 1h30m\n", true},
		{"size with a unit", base + "limits: {inflight_response_bytes: 512MiB}\n", true},
		{"size as a number", base + "limits: {inflight_response_bytes: 268435456}\n", true},
		{"bad size", base + "limits: {inflight_response_bytes: lots}\n", false},
		{"card off", base + "    card: false\n", true},
		{"card", base + "    card: {title: Demo}\n", true},
		{"card of a list", base + "    card: [x]\n", false},
		{"string for a list", base + "allowed_hosts: localhost\n", false},
		{"wrong rate-limit kind", base + "    rate_limits: [{per: ip, limit: 5, window: 1m}]\n", false},
		{"wrong audit arguments", base + "audit: {output: stdout, arguments: some}\n", false},
		{"no auth", strings.Replace(base, "auth: {mode: none}\n", "", 1), false},
		{"no auth mode", strings.Replace(base, "auth: {mode: none}", "auth: {}", 1), false},
		{"no virtual hosts", "auth: {mode: none}\n", false},
		{"audit without output", base + "audit: {arguments: none}\n", false},
		{"rate limit without window", base + "    rate_limits: [{per: principal, limit: 5}]\n", false},
		{"rate limit", base + "    rate_limits: [{per: principal, limit: 5, window: 1m}]\n", true},
		{"plugin without type", base + "    plugins: [{in: result, patterns: [x]}]\n", false},
		{"plugin", base + "    plugins: [{type: deny_pattern, in: result, patterns: [x]}]\n", true},
		{"jwt audience as a string", jwtConfig(`audience: api`), true},
		{"jwt audience as a list", jwtConfig(`audience: [api, other]`), true},
		{"jwt algorithm unknown", jwtConfig(`audience: api, algorithms: [HS128]`), false},
	}
	t.Setenv("MCPGW_TEST_SCHEMA_SECRET", strings.Repeat("k", 40))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, loadErr := config.Parse([]byte(c.yaml), "case.yaml")
			if (loadErr == nil) != c.valid {
				t.Fatalf("loader: valid=%v, want %v (%v)", loadErr == nil, c.valid, loadErr)
			}
			err := sch.Validate(instance(t, []byte(c.yaml)))
			if (err == nil) != c.valid {
				t.Fatalf("schema: valid=%v, want %v (%v)", err == nil, c.valid, err)
			}
		})
	}
}

func jwtConfig(fields string) string {
	return strings.Replace(base, `auth: {mode: none}`,
		`auth: {mode: jwt, jwt: {issuer: "https://idp.example", hs_secret_env: MCPGW_TEST_SCHEMA_SECRET, `+fields+`}}`, 1)
}
