package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckFindsBothRules: a long production function and a comment naming
// a missing file are found; the same in a _test.go file, a comment naming
// a present file and a URL are not.
func TestCheckFindsBothRules(t *testing.T) {
	dir := t.TempDir()
	long := "package x\n\n// See here.go and gone.go; go.dev/issue/1.\nfunc f() {\n" +
		strings.Repeat("\t_ = 1\n", 5) + "}\n"
	for name, src := range map[string]string{"here.go": long, "here_test.go": long} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	got, err := check([]string{"here.go", "here_test.go"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, f := range got {
		msgs = append(msgs, f.pos.Filename+": "+f.msg)
	}
	want := []string{
		"here.go: comment names gone.go, which is not in the repository",
		"here.go: function f is 5 lines (at most 4): split it",
		"here_test.go: comment names gone.go, which is not in the repository",
	}
	if strings.Join(slices.Sorted(slices.Values(msgs)), "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}
