package config

// The file format's shape: the raw types the loader decodes into, and the
// walk that checks a YAML tree against them before decoding (unknown
// fields, wrong kinds), so every error names its field path and line. The
// same types generate docs/reference/gateway.schema.json and
// docs/reference/config.md (internal/config/gen), so the editor schema,
// the reference and the loader cannot disagree on which fields exist.

//go:generate go run ./gen

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

var rawConfigType = reflect.TypeFor[rawConfig]()

// stringListType is a field that takes one string or a list of them.
var stringListType = reflect.TypeFor[stringList]()

// stringList is a YAML string or a list of strings (auth.jwt.audience).
type stringList []string

// UnmarshalYAML takes a scalar as a list of one.
func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = stringList{s}
		return nil
	}
	var ss []string
	if err := n.Decode(&ss); err != nil {
		return err
	}
	*l = ss
	return nil
}

// rawDuration is a duration field as written: a Go duration ("30s",
// "1h30m"), parsed by validator.duration so its error names the field.
type rawDuration string

// rawSize is a byte count as written: an integer, or a number with a unit
// (KB, MB, GB, KiB, MiB, GiB or B), parsed by validator.byteSize.
type rawSize string

// FileFormat is the shape of the configuration file as the loader reads
// it, for the generator of its JSON Schema and reference
// (internal/config/gen). The types are unexported: only their shape,
// struct tags and doc comments are meant to be read, through reflection.
type FileFormat struct {
	// Root is the whole file.
	Root reflect.Type
	// Duration and Size are the scalar fields parsed as a duration or a
	// byte count.
	Duration, Size reflect.Type
	// StringList takes one string or a list of them.
	StringList reflect.Type
	// Card takes a mapping or a boolean (false: no card).
	Card reflect.Type
}

// Format returns the file format's types.
func Format() FileFormat {
	return FileFormat{
		Root:       rawConfigType,
		Duration:   reflect.TypeFor[rawDuration](),
		Size:       reflect.TypeFor[rawSize](),
		StringList: stringListType,
		Card:       rawCardType,
	}
}

// checkShape walks the YAML node tree against the raw types: it reports
// unknown fields, duplicate keys and wrong node kinds by field path, and
// records the line of every path for later messages. Values are never
// quoted, since some of them are secrets.
func (v *validator) checkShape(n *yaml.Node, t reflect.Type, path string, depth int) {
	if depth > 32 {
		v.errf(path, "nesting too deep")
		return
	}
	if n.Kind == yaml.AliasNode {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if v.seenAlias(n, t) {
			return
		}
	}
	if _, seen := v.lines[path]; !seen {
		v.lines[path] = n.Line
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // same as absent
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawCardType && n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		return // card: false (card.go)
	}
	if t == stringListType && n.Kind == yaml.ScalarNode {
		return // one string stands for a list of one
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			v.errf(path, "must be a mapping, not %s", kindName(n))
			return
		}
		v.checkMapping(n, t, path, depth, false)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			v.errf(path, "must be a list, not %s", kindName(n))
			return
		}
		for i, c := range n.Content {
			v.checkShape(c, t.Elem(), indexPath(path, i), depth+1)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			v.errf(path, "must be a string, not %s", kindName(n))
		}
	case reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			v.errf(path, "must be an integer")
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" && n.Tag != "!!float" {
			v.errf(path, "must be a number")
		}
	}
}

// checkMapping checks the pairs of a mapping; merged is set for mappings
// pulled in with "<<", whose keys the explicit keys may override.
func (v *validator) checkMapping(n *yaml.Node, t reflect.Type, path string, depth int, merged bool) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			v.errf(path, "keys must be strings")
			continue
		}
		if k.Tag == "!!merge" {
			for val.Kind == yaml.AliasNode && val.Alias != nil {
				val = val.Alias
			}
			sources := []*yaml.Node{val}
			if val.Kind == yaml.SequenceNode {
				sources = val.Content
			}
			for _, m := range sources {
				for m.Kind == yaml.AliasNode && m.Alias != nil {
					m = m.Alias
				}
				if m.Kind != yaml.MappingNode {
					v.errf(path, "merge (<<) needs a mapping")
					continue
				}
				if v.seenAlias(m, t) {
					continue
				}
				v.checkMapping(m, t, path, depth+1, true)
			}
			continue
		}
		p := joinPath(path, k.Value)
		if seen[k.Value] {
			v.lines[p] = k.Line
			v.errf(p, "duplicate key")
			continue
		}
		seen[k.Value] = true
		if _, ok := v.lines[p]; !ok || !merged {
			v.lines[p] = k.Line
		}
		elem := t
		if t.Kind() == reflect.Map {
			elem = t.Elem()
		} else {
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				v.errf(p, "unknown field (valid fields: %s)", strings.Join(fieldNames(t), ", "))
				continue
			}
			elem = f.Type
		}
		v.checkShape(val, elem, p, depth+1)
	}
}

// seenAlias reports whether an aliased node was already checked as type t,
// marking it checked: each anchor is walked once, so alias bombs stay cheap.
func (v *validator) seenAlias(n *yaml.Node, t reflect.Type) bool {
	k := aliasKey{n, t}
	if v.aliases[k] {
		return true
	}
	if v.aliases == nil {
		v.aliases = map[aliasKey]bool{}
	}
	v.aliases[k] = true
	return false
}

type aliasKey struct {
	n *yaml.Node
	t reflect.Type
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func fieldNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		names = append(names, tag)
	}
	return names
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar"
	}
}
