package openapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// npmFixture returns the path of a file the npm fixtures ship
// (scripts/npm-fixtures.sh installs them into .cache/interop): ReadMe's
// example descriptions and GitHub's. Without them the test skips, and
// fails under CI=true outside -short (make test installs them first).
func npmFixture(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "interop", "node_modules", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" && !testing.Short() {
			t.Fatalf("%s is missing: .ci/run must run scripts/npm-fixtures.sh", p)
		}
		t.Skipf("%s is missing: run scripts/npm-fixtures.sh (make test does)", p)
	}
	return p
}

// load loads a description with o, failing the test on an error.
func load(t testing.TB, spec string, o Options) *API {
	t.Helper()
	o.Spec = spec
	if o.Backend == "" {
		o.Backend = "api"
	}
	a, err := Load(context.Background(), o)
	if err != nil {
		t.Fatalf("Load(%s): %v", filepath.Base(spec), err)
	}
	return a
}
