package main

// The schema in the editor it is written for: yaml-language-server (the
// engine of VS Code's YAML extension and of most editors' YAML support),
// from the npm fixtures, validates, completes and describes configs with
// it. Skips under -short (it starts Node) and without the fixtures
// (scripts/npm-fixtures.sh); fails without them under CI=true.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// yamlLanguageServer runs testdata/yaml_language_server.mjs; schema ""
// leaves each file to name its schema.
func yamlLanguageServer(t *testing.T, schema string, files ...string) (out struct {
	Files          map[string][]string
	AuthCompletion []string
	ModeHover      string
}) {
	t.Helper()
	testsupport.SkipShort(t)
	modules, err := filepath.Abs(filepath.Join(root, ".cache/interop/node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(modules, "node/bin/node")
	if _, err := os.Stat(filepath.Join(modules, "yaml-language-server/package.json")); err != nil {
		if os.Getenv("CI") != "" && !testing.Short() {
			t.Fatalf("yaml-language-server is missing from %s: run scripts/npm-fixtures.sh", modules)
		}
		t.Skipf("yaml-language-server is missing from %s: run scripts/npm-fixtures.sh (make test does)", modules)
	}
	args := append([]string{"testdata/yaml_language_server.mjs", modules, schema}, files...)
	data, err := exec.Command(node, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("yaml_language_server.mjs: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("yaml_language_server.mjs: %v: %s", err, data)
	}
	return out
}

var schemaHeader = regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=.*\n`)

func TestYAMLLanguageServer(t *testing.T) {
	schema, err := filepath.Abs(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var good []string
	for name, data := range shippedConfigs(t) {
		f := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(name))
		// An example's header names the schema relative to its own
		// directory, which the copy leaves; the schema argument stands in
		// (TestYAMLLanguageServerFollowsTheHeader checks the header).
		data = schemaHeader.ReplaceAll(data, nil)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		good = append(good, f)
	}
	bad := filepath.Join(dir, "bad.yaml")
	badYAML := strings.Replace(base, `url:`, `session: per-user, timeout: 30 seconds, url:`, 1) + "sesion_ttl: 1h\n"
	if err := os.WriteFile(bad, []byte(badYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	out := yamlLanguageServer(t, schema, append(good, bad)...)
	for _, f := range good {
		if msgs := out.Files[f]; len(msgs) > 0 {
			t.Errorf("%s: yaml-language-server reports %q", filepath.Base(f), msgs)
		}
	}
	msgs := strings.Join(out.Files[bad], "\n")
	for _, want := range []string{"sesion_ttl is not allowed", `"per-principal"`, "a duration such as 30s"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("bad.yaml: the messages lack %q:\n%s", want, msgs)
		}
	}
	for _, key := range []string{"jwt", "issuers", "resource_metadata"} {
		if !slices.Contains(out.AuthCompletion, key) {
			t.Errorf("completion under auth: %q lacks %s", out.AuthCompletion, key)
		}
	}
	if !strings.Contains(out.ModeHover, "bearer token") {
		t.Errorf("hover on auth.mode: %q, want its description", out.ModeHover)
	}
}

// TestYAMLLanguageServerFollowsTheHeader: the header examples carry finds
// the schema from an example's directory, with no editor settings.
func TestYAMLLanguageServerFollowsTheHeader(t *testing.T) {
	dir := t.TempDir()
	schema, err := os.ReadFile(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "docs/reference"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, schemaFile), schema, 0o600); err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(dir, "examples/one/gateway.yaml")
	if err := os.MkdirAll(filepath.Dir(example), 0o755); err != nil {
		t.Fatal(err)
	}
	text := exampleHeader + "\n" + strings.Replace(base, `url:`, `bogus: 1, url:`, 1)
	if err := os.WriteFile(example, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out := yamlLanguageServer(t, "", example)
	if msgs := out.Files[example]; len(msgs) != 1 || !strings.Contains(msgs[0], "bogus is not allowed") {
		t.Errorf("with the header only: %q, want the unknown field reported", msgs)
	}
}
