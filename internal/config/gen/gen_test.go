package main

// Drift tests: the checked-in schema and reference are what the generator
// makes now; they list exactly the fields the loader accepts; and the
// schema accepts every config the repository ships and refuses what the
// loader refuses.

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
)

// root is the module root, from this package's directory.
const root = "../../.."

func TestGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s: %v: run `make docs` (go run ./internal/config/gen)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what internal/config/gen makes from internal/config now: run `make docs` (go run ./internal/config/gen) and commit the result", name)
		}
	}
}

// TestSchemaAndReferenceListEveryField compares the fields the loader
// accepts (its raw types, walked as the loader's shape check walks them)
// with the checked-in schema's and reference's, both ways.
func TestSchemaAndReferenceListEveryField(t *testing.T) {
	loader := loaderPaths(config.Format())
	if len(loader) < 100 {
		t.Fatalf("only %d loader fields found: the walk is broken", len(loader))
	}
	schema := schemaPaths(t, checkedInSchema(t))
	ref := referencePaths(t)
	compare := func(what string, got []string) {
		t.Helper()
		for _, p := range loader {
			if !slices.Contains(got, p) {
				t.Errorf("%s lacks field %s, which the loader accepts: run `make docs`", what, p)
			}
		}
		for _, p := range got {
			if !slices.Contains(loader, p) {
				t.Errorf("%s lists field %s, which the loader refuses", what, p)
			}
		}
	}
	compare(schemaFile, schema)
	compare(referenceFile, ref)
}

// TestEveryFieldIsDescribed holds the config types' doc comments, the
// single source of the descriptions, to cover every field.
func TestEveryFieldIsDescribed(t *testing.T) {
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for k, v := range props {
			p := strings.TrimPrefix(path+"."+k, ".")
			ps := v.(map[string]any)
			if d, _ := ps["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s has no description: write the doc comment of its raw field in internal/config, then run `make docs`", p)
			}
			eachSub(p, ps, walk)
		}
	}
	walk("", checkedInSchema(t))
}

// loaderPaths lists the dotted path of every field the loader's raw types
// take: "<name>" for a map's keys, "[]" for a list's items.
func loaderPaths(ff config.FileFormat) []string {
	var out []string
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case t.Kind() == reflect.Map:
			walk(path+mapKey(path), t.Elem())
		case t.Kind() == reflect.Slice && t != ff.StringList:
			walk(path+listItem, t.Elem())
		case t.Kind() == reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if !f.IsExported() || name == "" || name == "-" {
					continue
				}
				p := strings.TrimPrefix(path+"."+name, ".")
				out = append(out, p)
				walk(p, f.Type)
			}
		}
	}
	walk("", ff.Root)
	sort.Strings(out)
	return out
}

// schemaPaths lists the fields of a schema read as plain JSON (not through
// the generator's types), with the notation of loaderPaths.
func schemaPaths(t *testing.T, s map[string]any) []string {
	var out []string
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false && props != nil {
			t.Errorf("%q takes unknown fields; the loader refuses them", path)
		}
		for k, v := range props {
			p := strings.TrimPrefix(path+"."+k, ".")
			out = append(out, p)
			eachSub(p, v.(map[string]any), walk)
		}
	}
	walk("", s)
	sort.Strings(out)
	return slices.Compact(out)
}

// eachSub calls walk on the mappings a field's schema s holds: itself, a
// map's values, a list's items, a union's alternatives.
func eachSub(path string, s map[string]any, walk func(string, map[string]any)) {
	if _, ok := s["properties"]; ok {
		walk(path, s)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		eachSub(path+mapKey(path), ap, walk)
	}
	if it, ok := s["items"].(map[string]any); ok {
		eachSub(path+listItem, it, walk)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		alts, _ := s[key].([]any)
		for _, a := range alts {
			eachSub(path, a.(map[string]any), walk)
		}
	}
}

// referencePaths lists the fields of the reference's tables: the first
// cell of each row, "| `path` | ...".
func referencePaths(t *testing.T) []string {
	data, err := os.ReadFile(filepath.Join(root, referenceFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		p, _, ok := strings.Cut(rest, "` |")
		if !ok {
			t.Fatalf("reference row without a path cell: %s", line)
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
