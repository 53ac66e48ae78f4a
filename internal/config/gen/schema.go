package main

// The JSON Schema of the configuration file, reflected from the loader's
// raw types by invopop/jsonschema (field names from yaml tags; enums,
// defaults and bounds from jsonschema tags; descriptions from doc
// comments). It is draft-07 and inlined (no $ref), the dialect
// yaml-language-server and JetBrains support fully. Every mapping refuses
// unknown fields, as the loader does.

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/mcpgw/gateway/internal/config"
)

// draft07 is the dialect of the generated schema.
const draft07 = "http://json-schema.org/draft-07/schema#"

// durationPattern is what time.ParseDuration takes, minus signs (no
// duration field takes a negative one).
const durationPattern = `^\s*(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`

// sizePattern is a byte count with an optional unit (validator.byteSize).
const sizePattern = `^\s*[0-9]+\s*(B|KB|MB|GB|KiB|MiB|GiB)?\s*$`

// patternMessage is the keyword yaml-language-server (and VS Code) show
// instead of a pattern that a value does not match; validators ignore it.
const patternMessage = "patternErrorMessage"

// buildSchema reflects the file format into a schema. comments maps
// "rawType.Field" to the field's doc comment.
func buildSchema(comments map[string]string) *jsonschema.Schema {
	ff := config.Format()
	s := newReflector(ff, comments, true).ReflectFromType(ff.Root)
	s.Version = draft07
	s.Title = "mcpgw gateway configuration"
	s.Description = "The gateway's config file (gateway.yaml), as `gateway check` reads it. " +
		"Generated from internal/config by internal/config/gen: do not edit."
	sizesAsUnion(s)
	return s
}

// newReflector makes the reflector; withCard maps the card type to its
// union (off when reflecting the card's own mapping).
func newReflector(ff config.FileFormat, comments map[string]string, withCard bool) *jsonschema.Reflector {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		DoNotReference:             true,
		ExpandedStruct:             true,
		Anonymous:                  true,
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return ""
			}
			return comments[t.Name()+"."+field]
		},
	}
	r.Mapper = func(t reflect.Type) *jsonschema.Schema {
		switch t {
		case ff.Duration:
			return &jsonschema.Schema{Type: "string", Pattern: durationPattern,
				Extras: map[string]any{patternMessage: "a duration such as 30s, 5m or 1h30m"}}
		case ff.Size:
			return &jsonschema.Schema{Type: "string", Pattern: sizePattern}
		case ff.StringList:
			return &jsonschema.Schema{OneOf: []*jsonschema.Schema{
				{Type: "string"},
				{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			}}
		case ff.Card:
			if !withCard {
				return nil
			}
			obj := newReflector(ff, comments, false).ReflectFromType(t)
			obj.Version = ""
			return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "boolean"}, obj}}
		}
		return nil
	}
	return r
}

// sizesAsUnion turns every byte-count field into "an integer, or a string
// with a unit": YAML reads 268435456 as a number, 256MiB as a string. The
// reflector knows one type per field, so the union is made afterwards.
func sizesAsUnion(s *jsonschema.Schema) {
	var sizes []*jsonschema.Schema
	eachSchema(s, func(n *jsonschema.Schema) {
		if n.Type == "string" && n.Pattern == sizePattern {
			sizes = append(sizes, n)
		}
	})
	for _, n := range sizes {
		n.AnyOf = []*jsonschema.Schema{
			{Type: "integer", Minimum: json.Number("0")},
			{Type: "string", Pattern: sizePattern,
				Extras: map[string]any{patternMessage: "a byte size such as 268435456, 256MiB or 1GiB"}},
		}
		n.Type, n.Pattern = "", ""
	}
}

// eachSchema calls f on s and every schema below it.
func eachSchema(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	if s.Properties != nil {
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			eachSchema(p.Value, f)
		}
	}
	eachSchema(s.Items, f)
	eachSchema(s.AdditionalProperties, f)
	for _, c := range append(append([]*jsonschema.Schema{}, s.OneOf...), s.AnyOf...) {
		eachSchema(c, f)
	}
}

// marshalSchema renders the schema as indented JSON, non-ASCII and <>&
// as they are.
func marshalSchema(s *jsonschema.Schema) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fieldComments reads the doc comment (or line comment) of every struct
// field in the package at dir, keyed "Type.Field", one paragraph per
// blank line. invopop's own extractor skips unexported types, and every
// raw type is unexported.
func fieldComments(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				text := fld.Doc.Text()
				if text == "" {
					text = fld.Comment.Text()
				}
				for _, id := range fld.Names {
					if text != "" {
						out[ts.Name.Name+"."+id.Name] = paragraphs(text)
					}
				}
			}
			return false
		})
	}
	return out, nil
}

// paragraphs joins a comment's wrapped lines, keeping blank-line breaks.
func paragraphs(text string) string {
	var ps []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		ps = append(ps, strings.Join(strings.Fields(p), " "))
	}
	return strings.Join(ps, "\n\n")
}
