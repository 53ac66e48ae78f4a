package main

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// `make lambda` zips the bundle with zipbundle.go: Lambda runs bootstrap
// only if the zip keeps it executable.
func TestZipBundle_KeepsModesAndPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "gateway.yaml"), []byte("auth: {mode: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "gateway.zip")
	if b, err := exec.Command("go", "run", "zipbundle.go", "-o", out, dir).CombinedOutput(); err != nil {
		t.Fatalf("zipbundle: %v\n%s", err, b)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got := map[string]os.FileMode{}
	for _, f := range zr.File {
		got[f.Name] = f.Mode().Perm()
		if f.Name == "conf/gateway.yaml" {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			if string(b) != "auth: {mode: none}\n" {
				t.Errorf("content %q", b)
			}
		}
	}
	if len(got) != 2 || got["bootstrap"] != 0o755 || got["conf/gateway.yaml"] != 0o644 {
		t.Errorf("entries %v: want bootstrap 0755 and conf/gateway.yaml 0644, and not the zip itself", got)
	}
}
