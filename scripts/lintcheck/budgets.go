package main

// The mechanical limits on the router's spine (issue 38): how
// many methods one type of router/ or handler/ has, how many
// context.WithValue sites production code has (optional arguments travel
// in option structs), and how many places compare a request's method to a
// name instead of reading the method tables. Each is a budget that is off
// (0) until make lint turns it on; -report prints the counts and where they
// are, so a budget can be set from the numbers.

import (
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// budgets are the limits; 0 turns one off.
type budgets struct {
	methods, withValue, methodCompares int
}

// tally is what the budgets count, over every production file.
type tally struct {
	types     map[typeKey]*typeTally
	withValue []token.Position
	compares  []compare
}

// typeKey is a type by its package directory and name.
type typeKey struct{ dir, name string }

type typeTally struct {
	methods int
	decl    token.Position // where the type is declared; zero when not in a counted file
	first   token.Position // its first method seen, for a type declared elsewhere
}

// compare is one comparison of a method to a name.
type compare struct {
	pos  token.Position
	name string
}

func newTally() *tally { return &tally{types: map[typeKey]*typeTally{}} }

// mcpMethod matches MCP's method and notification names.
var mcpMethod = regexp.MustCompile(`^(initialize|ping|(tools|resources|prompts|tasks|skills|notifications)/[A-Za-z_/]+|` +
	`completion/complete|logging/setLevel|sampling/createMessage|elicitation/create|roots/list|server/discover|subscriptions/listen)$`)

// methodsCounted: a type's methods are counted in router/ and handler/.
func methodsCounted(p string) bool {
	return strings.HasPrefix(p, "router/") || strings.HasPrefix(p, "handler/")
}

// comparesCounted: the method tables (internal/wire, and the router's
// dispatch table: methods.go in router/) are where names belong.
func comparesCounted(p string) bool {
	return !strings.HasPrefix(p, "internal/wire/") && p != "router/methods.go"
}

// add counts production file f, at path p.
func (t *tally) add(fset *token.FileSet, f *ast.File, p string) {
	p = path.Clean(p)
	if methodsCounted(p) {
		t.addTypes(fset, f, path.Dir(p))
	}
	ctxName, wireName := importName(f, "context"), importName(f, "github.com/mcpgw/gateway/internal/wire")
	counted := comparesCounted(p)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isSelector(n.Fun, ctxName, func(s string) bool { return s == "WithValue" }) {
				t.withValue = append(t.withValue, fset.Position(n.Pos()))
			}
		case *ast.BinaryExpr:
			if counted && (n.Op == token.EQL || n.Op == token.NEQ) {
				for _, e := range [2]ast.Expr{n.X, n.Y} {
					if name, ok := methodName(e, wireName); ok {
						t.compares = append(t.compares, compare{fset.Position(e.Pos()), name})
					}
				}
			}
		case *ast.SwitchStmt:
			if counted && n.Tag != nil {
				t.addCases(fset, n, wireName)
			}
		}
		return true
	})
}

// addCases counts each method name a switch's case lists hold.
func (t *tally) addCases(fset *token.FileSet, s *ast.SwitchStmt, wireName string) {
	for _, st := range s.Body.List {
		cc, ok := st.(*ast.CaseClause)
		if !ok {
			continue
		}
		for _, e := range cc.List {
			if name, ok := methodName(e, wireName); ok {
				t.compares = append(t.compares, compare{fset.Position(e.Pos()), name})
			}
		}
	}
}

// addTypes counts the methods and notes the type declarations of a file
// in directory dir.
func (t *tally) addTypes(fset *token.FileSet, f *ast.File, dir string) {
	at := func(name string) *typeTally {
		k := typeKey{dir, name}
		if t.types[k] == nil {
			t.types[k] = &typeTally{}
		}
		return t.types[k]
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				continue
			}
			if name := receiverName(d.Recv.List[0].Type); name != "" {
				tt := at(name)
				tt.methods++
				if !tt.first.IsValid() {
					tt.first = fset.Position(d.Pos())
				}
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					at(ts.Name.Name).decl = fset.Position(ts.Pos())
				}
			}
		}
	}
}

// receiverName is the type name of a method's receiver: T, *T, T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// methodName reports whether e is a method name: a string literal MCP
// uses as one, or a wire.Method* constant.
func methodName(e ast.Expr, wireName string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil && mcpMethod.MatchString(s)
	case *ast.SelectorExpr:
		if isSelector(x, wireName, func(s string) bool { return strings.HasPrefix(s, "Method") }) {
			return "wire." + x.Sel.Name, true
		}
	}
	return "", false
}

// isSelector reports whether e is pkg.Name with a Name that fits.
func isSelector(e ast.Expr, pkg string, fits func(string) bool) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || pkg == "" {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == pkg && fits(s.Sel.Name)
}

// importName is the name f uses for the package at importPath; "" when f
// does not import it.
func importName(f *ast.File, importPath string) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == importPath {
			if im.Name != nil {
				return im.Name.Name
			}
			return path.Base(p)
		}
	}
	return ""
}

// typeCount is one type's method count, for findings and the report.
type typeCount struct {
	name    string
	methods int
	pos     token.Position
}

// typeCounts are the counted types, most methods first.
func (t *tally) typeCounts() []typeCount {
	var out []typeCount
	for k, tt := range t.types {
		if tt.methods == 0 {
			continue
		}
		pos := tt.decl
		if !pos.IsValid() {
			pos = tt.first
		}
		out = append(out, typeCount{path.Base(k.dir) + "." + k.name, tt.methods, pos})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].methods != out[j].methods {
			return out[i].methods > out[j].methods
		}
		return out[i].pos.Filename+out[i].name < out[j].pos.Filename+out[j].name
	})
	return out
}

// over is what breaks the budgets that are on.
func (t *tally) over(b budgets) []finding {
	var out []finding
	if b.methods > 0 {
		for _, tc := range t.typeCounts() {
			if tc.methods > b.methods {
				out = append(out, finding{tc.pos, fmt.Sprintf("type %s has %d methods (at most %d): split it", tc.name, tc.methods, b.methods)})
			}
		}
	}
	if n := len(t.withValue); b.withValue > 0 && n > b.withValue {
		for _, pos := range t.withValue {
			out = append(out, finding{pos, fmt.Sprintf("context.WithValue: %d sites in production code (at most %d): pass options explicitly", n, b.withValue)})
		}
	}
	if n := len(t.compares); b.methodCompares > 0 && n > b.methodCompares {
		for _, c := range t.compares {
			out = append(out, finding{c.pos, fmt.Sprintf("compares a method to %s: %d comparisons (at most %d): read the method tables", c.name, n, b.methodCompares)})
		}
	}
	return out
}

// reportTypes bounds the types -report lists.
const reportTypes = 15

// report prints the three counts and where they are.
func (t *tally) report(w io.Writer) {
	counts := t.typeCounts()
	most := 0
	if len(counts) > 0 {
		most = counts[0].methods
	}
	fmt.Fprintf(w, "max-methods: %d (most methods of a type in router/ and handler/)\n", most)
	for i, tc := range counts {
		if i == reportTypes {
			break
		}
		fmt.Fprintf(w, "\t%d %s\t%s:%d\n", tc.methods, tc.name, tc.pos.Filename, tc.pos.Line)
	}
	fmt.Fprintf(w, "max-withvalue: %d (context.WithValue sites)\n", len(t.withValue))
	for _, pos := range t.withValue {
		fmt.Fprintf(w, "\t%s:%d\n", pos.Filename, pos.Line)
	}
	fmt.Fprintf(w, "max-method-compares: %d (comparisons of a method to a name)\n", len(t.compares))
	for _, c := range t.compares {
		fmt.Fprintf(w, "\t%s:%d\t%s\n", c.pos.Filename, c.pos.Line, c.name)
	}
}
