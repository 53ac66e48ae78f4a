package main

import (
	"fmt"
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
	got, _, err := check([]string{"here.go", "here_test.go"}, options{max: 4})
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

// TestBudgets: each budget counts only what it is about (production
// files; methods in router/ and handler/; comparisons outside the method
// tables, anywhere else in production code) and, when on, reports every place once the count passes it.
func TestBudgets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"router/r.go": "package router\n\nimport \"context\"\n\ntype R struct{}\n\n" +
			"func (R) a()  {}\nfunc (*R) b() {}\n\ntype G[T any] struct{}\n\nfunc (g *G[T]) c() {}\n\n" +
			"func f(ctx context.Context, m string) {\n\t_ = context.WithValue(ctx, 1, 2)\n" +
			"\tif m == \"tools/call\" || \"ping\" != m || m == \"tools\" {\n\t}\n" +
			"\tswitch m {\n\tcase \"notifications/progress\", \"initialize\", \"other\":\n\t}\n" +
			"\tswitch {\n\tcase m == \"resources/read\":\n\t}\n}\n",
		"router/r_test.go": "package router\n\nimport \"context\"\n\nfunc (R) c() {}\n\n" +
			"func g(ctx context.Context, m string) bool {\n\t_ = context.WithValue(ctx, 1, 2)\n\treturn m == \"ping\"\n}\n",
		"handler/deep/h.go": "package deep\n\nimport (\n\tstd \"context\"\n\n\t\"github.com/mcpgw/gateway/internal/wire\"\n)\n\n" +
			"type H int\n\nfunc (H) a() {}\n\n" +
			"func f(ctx std.Context, m string) bool {\n\t_ = std.WithValue(ctx, 1, 2)\n\treturn m == wire.MethodToolsCall || wire.MethodOf(m).Tool\n}\n",
		"store/s.go":                "package store\n\ntype S int\n\nfunc (S) a() {}\nfunc (S) b() {}\nfunc (S) c() {}\n\nfunc f(m string) bool { return m == \"ping\" }\n",
		"internal/wire/w.go":        "package wire\n\nfunc f(m string) bool { return m == \"ping\" }\n",
		"router/methods.go":         "package router\n\nfunc h(m string) bool { return m == \"ping\" }\n",
		"internal/testsupport/t.go": "package testsupport\n\nfunc f(m string) bool { return m == \"ping\" }\n",
	}
	var names []string
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	t.Chdir(dir)

	_, tl, err := check(names, options{max: 80})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, tc := range tl.typeCounts() {
		types = append(types, fmt.Sprintf("%s %d", tc.name, tc.methods))
	}
	if want := []string{"router.R 2", "deep.H 1", "router.G 1"}; !slices.Equal(types, want) {
		t.Errorf("types %v, want %v", types, want)
	}
	if len(tl.withValue) != 2 {
		t.Errorf("%d WithValue sites, want 2 (router/r.go, handler/deep/h.go)", len(tl.withValue))
	}
	var compares []string
	for _, c := range tl.compares {
		compares = append(compares, fmt.Sprintf("%s:%d %s", c.pos.Filename, c.pos.Line, c.name))
	}
	want := []string{"handler/deep/h.go:15 wire.MethodToolsCall", "router/r.go:16 tools/call", "router/r.go:16 ping",
		"router/r.go:19 notifications/progress", "router/r.go:19 initialize", "router/r.go:22 resources/read", "store/s.go:9 ping"}
	if !slices.Equal(compares, want) {
		t.Errorf("compares:\n%s\nwant:\n%s", strings.Join(compares, "\n"), strings.Join(want, "\n"))
	}

	// Budgets the tree keeps find nothing; budgets it passes find each place.
	if found, _, _ := check(names, options{max: 80, budgets: budgets{methods: 2, withValue: 2, methodCompares: 7}}); len(found) != 0 {
		t.Errorf("within budgets, found %v", found)
	}
	found, _, _ := check(names, options{max: 80, budgets: budgets{methods: 1, withValue: 1, methodCompares: 6}})
	var msgs []string
	for _, f := range found {
		msgs = append(msgs, f.msg)
	}
	for _, w := range []string{
		"type router.R has 2 methods (at most 1): split it",
		"context.WithValue: 2 sites in production code (at most 1): pass options explicitly",
		"compares a method to ping: 7 comparisons (at most 6): read the method tables",
	} {
		if !slices.Contains(msgs, w) {
			t.Errorf("no finding %q in %q", w, msgs)
		}
	}
	if len(found) != 1+2+7 {
		t.Errorf("%d findings, want 10: %q", len(found), msgs)
	}

	var out strings.Builder
	tl.report(&out)
	for _, w := range []string{"max-methods: 2", "\t2 router.R\trouter/r.go:5", "max-withvalue: 2", "max-method-compares: 7", "\trouter/r.go:19\tinitialize"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
}
