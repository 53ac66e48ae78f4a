// Command lintcheck holds the house rules no stock linter checks, so that
// `make lint` keeps them instead of a reviewer's memory (issue 38): no
// production function longer than a limit, and no comment naming a .go
// file that is not in the repository (a comment pointing at a file that
// moved or was renamed sends a reader nowhere); and, when their flags
// are set, the spine's budgets (budgets.go): methods per type, WithValue
// sites, comparisons of a method to a name.
//
//	go run ./scripts/lintcheck [-max 80] [-max-methods N] [-max-withvalue N]
//		[-max-method-compares N] [-report] FILE...
//
// FILE is every tracked .go file (`git ls-files '*.go'`): the list is both
// what is checked and what a named file may be. It prints one line per
// finding, "path:line: message", and exits 1 when there is any.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
)

func main() {
	var o options
	flag.IntVar(&o.max, "max", 80, "longest production function body allowed, in lines")
	flag.IntVar(&o.budgets.methods, "max-methods", 0, "most methods a type of router/ or handler/ may have (0: unchecked)")
	flag.IntVar(&o.budgets.withValue, "max-withvalue", 0, "most context.WithValue sites in production code (0: unchecked)")
	flag.IntVar(&o.budgets.methodCompares, "max-method-compares", 0,
		"most comparisons of a method to a name outside the method tables (0: unchecked)")
	counts := flag.Bool("report", false, "print the budgets' counts and where they are")
	flag.Parse()
	findings, t, err := check(flag.Args(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lintcheck:", err)
		os.Exit(2)
	}
	if *counts {
		t.report(os.Stdout)
	}
	report(os.Stdout, findings)
	if len(findings) > 0 {
		os.Exit(1)
	}
}

// finding is one broken rule at one place.
type finding struct {
	pos token.Position
	msg string
}

func report(w io.Writer, fs []finding) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].pos.Filename != fs[j].pos.Filename {
			return fs[i].pos.Filename < fs[j].pos.Filename
		}
		return fs[i].pos.Line < fs[j].pos.Line
	})
	for _, f := range fs {
		fmt.Fprintf(w, "%s:%d: %s\n", f.pos.Filename, f.pos.Line, f.msg)
	}
}

// options are the rules' limits.
type options struct {
	max     int // longest function body
	budgets budgets
}

// check parses every file, applies the rules and counts what the budgets
// limit.
func check(files []string, o options) ([]finding, *tally, error) {
	known := newFileSet(files)
	fset := token.NewFileSet()
	t := newTally()
	var out []finding
	for _, p := range files {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		if production(p) {
			out = append(out, longFuncs(fset, f, o.max)...)
			t.add(fset, f, p)
		}
		out = append(out, staleNames(fset, f, p, known)...)
	}
	return append(out, t.over(o.budgets)...), t, nil
}

// production reports whether p is code the gateway ships or runs, rather
// than a test, the fixtures only tests start (internal/testsupport,
// tests/) or a suite other packages' tests run (a package named like
// httptest: store/storetest): the length rule is for the code a reader
// maintains the product through.
func production(p string) bool {
	if strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, "internal/testsupport/") || strings.HasPrefix(p, "tests/") {
		return false
	}
	return !strings.HasSuffix(path.Dir(p), "test")
}

// longFuncs finds the functions (and methods) whose body, braces
// excluded, is longer than max lines.
func longFuncs(fset *token.FileSet, f *ast.File, max int) []finding {
	var out []finding
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
		if n > max {
			out = append(out, finding{fset.Position(fd.Pos()),
				fmt.Sprintf("function %s is %d lines (at most %d): split it", fd.Name.Name, n, max)})
		}
	}
	return out
}

// goName is a file name ending in .go as a comment writes it, with or
// without a directory ("routed.go", "router/upstream/client.go").
var goName = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.go\b`)

// staleNames finds the comments that name a .go file the repository does
// not hold.
func staleNames(fset *token.FileSet, f *ast.File, p string, known fileSet) []finding {
	var out []finding
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			for _, m := range goName.FindAllStringIndex(c.Text, -1) {
				name := c.Text[m[0]:m[1]]
				if m[1] < len(c.Text) && strings.ContainsRune("/-", rune(c.Text[m[1]])) {
					continue // part of a longer word: "go.dev/..." or "x.go-y"
				}
				if strings.HasPrefix(name, "_") {
					continue // a kind of file ("_test.go"), not a file
				}
				if !known.has(name, path.Dir(p)) {
					out = append(out, finding{fset.Position(c.Pos() + token.Pos(m[0])),
						fmt.Sprintf("comment names %s, which is not in the repository", name)})
				}
			}
		}
	}
	return out
}

// fileSet is the repository's .go files by path and by base name.
type fileSet struct {
	paths map[string]bool
	bases map[string]bool
}

func newFileSet(files []string) fileSet {
	s := fileSet{paths: map[string]bool{}, bases: map[string]bool{}}
	for _, p := range files {
		p = path.Clean(p)
		s.paths[p] = true
		s.bases[path.Base(p)] = true
	}
	return s
}

// has reports whether name is a file of the repository: a bare name is any
// file of that base name; a name with a directory is a path from the
// repository's root, from the commenting file's directory, or a trailing
// part of one ("upstream/client.go" written in router/).
func (s fileSet) has(name, dir string) bool {
	name = strings.TrimPrefix(path.Clean(name), "./")
	if !strings.Contains(name, "/") {
		return s.bases[name]
	}
	if s.paths[name] || s.paths[path.Join(dir, name)] {
		return true
	}
	for p := range s.paths {
		if strings.HasSuffix(p, "/"+name) {
			return true
		}
	}
	return false
}
