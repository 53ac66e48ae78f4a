package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A description served by backends on several vhosts is read and
// compiled once per config load when their openapi blocks and
// credentials agree, and apart when they do not.

const sharedSpec = `openapi: 3.0.3
info: {title: Shared, version: "1"}
servers: [{url: "http://127.0.0.1:9/"}]
paths:
  /a: {get: {operationId: get_a, responses: {"200": {description: ok}}}}
  /b: {get: {operationId: get_b, responses: {"200": {description: ok}}}}
`

func TestOpenAPI_OneDescriptionOnSeveralVHostsIsCompiledOnce(t *testing.T) {
	spec := filepath.Join(t.TempDir(), "shared.yaml")
	if err := os.WriteFile(spec, []byte(sharedSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustParse(t, fmt.Sprintf(`auth: {mode: none}
virtual_hosts:
  one:
    backends:
      api: {openapi: {spec: %[1]q}, add_headers: {X-A: "1", X-B: "2"}}
  two:
    tool_search: {}
    backends:
      api: {openapi: {spec: %[1]q}, add_headers: {X-B: "3", X-A: "4"}}
  three:
    backends:
      api: {openapi: {spec: %[1]q, operations: [get_a]}}
`, spec))
	one, two, three := cfg.VirtualHosts["one"].Backends["api"].OpenAPI, cfg.VirtualHosts["two"].Backends["api"].OpenAPI, cfg.VirtualHosts["three"].Backends["api"].OpenAPI
	if one == nil || one != two {
		t.Fatalf("the same block on two vhosts compiled twice: %p %p", one, two)
	}
	if three == one || three.Len() != 1 || one.Len() != 2 {
		t.Fatalf("another operations list shares the API: %p %p (%d tools)", three, one, three.Len())
	}
}

// A description that cannot be read is reported at the backend's spec
// field, naming the file as resolved from the config's directory, and
// the backend.
func TestOpenAPI_UnreadableDescriptionNamesItAndTheBackend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(`auth: {mode: none}
virtual_hosts:
  demo:
    backends:
      notes: {openapi: {spec: specs/notes.yaml}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("loaded")
	}
	for _, s := range []string{"virtual_hosts.demo.backends.notes.openapi.spec: cannot read the description",
		filepath.Join(dir, "specs", "notes.yaml"), `backend "notes"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
}
