// Command gen writes the configuration file's JSON Schema
// (docs/reference/gateway.schema.json) and reference
// (docs/reference/config.md) from the loader's own types in
// internal/config, so neither can drift from what `gateway check`
// accepts: the field set, enums and defaults come from the types' struct
// tags, the descriptions from their doc comments. Run it after changing a
// config type: `make docs`, `go generate ./internal/config`, or
// `go run ./internal/config/gen`; a test fails until the files match.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Where the generated files go, relative to the module root.
const (
	schemaFile    = "docs/reference/gateway.schema.json"
	referenceFile = "docs/reference/config.md"
	configDir     = "internal/config"
)

func main() {
	root := flag.String("root", "", "module root (default: the nearest directory above holding go.mod)")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	if root == "" {
		var err error
		if root, err = moduleRoot(); err != nil {
			return err
		}
	}
	files, err := generate(root)
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generate returns the content of every generated file, by path relative
// to root.
func generate(root string) (map[string][]byte, error) {
	comments, err := fieldComments(filepath.Join(root, configDir))
	if err != nil {
		return nil, err
	}
	s := buildSchema(comments)
	js, err := marshalSchema(s)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{schemaFile: js, referenceFile: reference(s)}, nil
}

// moduleRoot is the nearest directory at or above the working directory
// that holds go.mod (go generate runs in internal/config).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: give -root")
		}
		dir = parent
	}
}
