package openapi

// OpenAPI schemas become JSON Schema 2020-12, the dialect of MCP's
// inputSchema and outputSchema. A schema reached through a reference is
// written once, under $defs, and referred to as #/$defs/Name wherever it
// is used: a cycle (a tree node whose children are tree nodes) is then a
// reference to itself rather than an endless expansion, and a component
// used by many operations is converted once for the whole API (its JSON
// is kept per direction and copied into each tool that needs it).
//
// OpenAPI 3.0's own keywords are translated (nullable into a "null" type,
// a boolean exclusiveMinimum into a number); an input schema leaves out
// readOnly properties and an output schema writeOnly ones; what only
// documents (examples, xml, discriminator, externalDocs, x- extensions)
// is dropped.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// direction says which side of a call a schema describes.
type direction int

const (
	input  direction = iota // what the client sends: readOnly left out
	output                  // what the API answers: writeOnly left out
)

// schemas converts an API's schemas, sharing referenced ones.
type schemas struct {
	v30   bool                        // OpenAPI 3.0 semantics (nullable, boolean bounds)
	names map[*openapi3.Schema]string // referenced schema -> its $defs name
	taken map[string]bool
	defs  [2]map[*openapi3.Schema]*def
}

// def is one referenced schema, converted.
type def struct {
	name string
	json json.RawMessage
	deps []*openapi3.Schema // the referenced schemas it refers to
}

func newSchemas(v30 bool) *schemas {
	return &schemas{v30: v30, names: map[*openapi3.Schema]string{}, taken: map[string]bool{},
		defs: [2]map[*openapi3.Schema]*def{{}, {}}}
}

// converted is one schema converted for a tool: its JSON value and the
// referenced schemas it needs under $defs.
type converted struct {
	value any
	deps  []*openapi3.Schema
}

// convert converts a schema (inline or referenced) for one direction.
func (s *schemas) convert(sr *openapi3.SchemaRef, dir direction) (converted, error) {
	c := &conversion{s: s, dir: dir}
	v, err := c.ref(sr, 0)
	if err != nil {
		return converted{}, err
	}
	return converted{value: v, deps: c.deps}, nil
}

// defsFor collects the $defs a tool's schemas need: the referenced
// schemas they name and those those name, converted on first use. The
// chain of references is bounded by MaxSchemaDepth.
func (s *schemas) defsFor(dir direction, roots ...[]*openapi3.Schema) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	seen := map[*openapi3.Schema]bool{}
	var level []*openapi3.Schema
	for _, r := range roots {
		level = append(level, r...)
	}
	for depth := 0; len(level) > 0; depth++ {
		if depth > MaxSchemaDepth {
			return nil, fmt.Errorf("schemas refer to schemas more than %d references deep", MaxSchemaDepth)
		}
		var next []*openapi3.Schema
		for _, p := range level {
			if seen[p] {
				continue
			}
			seen[p] = true
			d, err := s.def(p, dir)
			if err != nil {
				return nil, err
			}
			out[d.name] = d.json
			next = append(next, d.deps...)
		}
		level = next
	}
	return out, nil
}

// def converts a referenced schema once per direction.
func (s *schemas) def(p *openapi3.Schema, dir direction) (*def, error) {
	if d, ok := s.defs[dir][p]; ok {
		return d, nil
	}
	c := &conversion{s: s, dir: dir}
	v, err := c.value(p, 0)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", s.names[p], err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := &def{name: s.names[p], json: raw, deps: c.deps}
	s.defs[dir][p] = d
	return d, nil
}

var defNameRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// nameOf gives a referenced schema its $defs name: the reference's last
// segment, made unique across the API.
func (s *schemas) nameOf(p *openapi3.Schema, ref string) string {
	if n, ok := s.names[p]; ok {
		return n
	}
	base := ref
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == '/' || ref[i] == '#' {
			base = ref[i+1:]
			break
		}
	}
	base = defNameRE.ReplaceAllString(base, "_")
	if base == "" {
		base = "schema"
	}
	name := base
	for i := 2; s.taken[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	s.taken[name] = true
	s.names[p] = name
	return name
}

// conversion is one walk over a schema: what it refers to is collected
// rather than followed, so a walk is as deep as the schema is written.
type conversion struct {
	s    *schemas
	dir  direction
	deps []*openapi3.Schema
}

func (c *conversion) ref(sr *openapi3.SchemaRef, depth int) (any, error) {
	if sr == nil || sr.Value == nil {
		return map[string]any{}, nil
	}
	if sr.Ref != "" {
		name := c.s.nameOf(sr.Value, sr.Ref)
		c.deps = append(c.deps, sr.Value)
		return map[string]any{"$ref": "#/$defs/" + name}, nil
	}
	return c.value(sr.Value, depth)
}

// value converts one schema written inline.
func (c *conversion) value(sc *openapi3.Schema, depth int) (any, error) {
	if depth > MaxSchemaDepth {
		return nil, fmt.Errorf("a schema nests deeper than %d levels", MaxSchemaDepth)
	}
	if sc.Always != nil {
		return *sc.Always, nil
	}
	m := map[string]any{}
	c.annotations(sc, m)
	c.types(sc, m)
	c.bounds(sc, m)
	if err := c.children(sc, m, depth); err != nil {
		return nil, err
	}
	return m, nil
}

func (c *conversion) annotations(sc *openapi3.Schema, m map[string]any) {
	setIf(m, "title", sc.Title, sc.Title != "")
	setIf(m, "description", sc.Description, sc.Description != "")
	setIf(m, "format", sc.Format, sc.Format != "")
	setIf(m, "default", sc.Default, sc.Default != nil)
	setIf(m, "deprecated", true, sc.Deprecated)
	setIf(m, "const", sc.Const, sc.Const != nil)
	setIf(m, "pattern", sc.Pattern, sc.Pattern != "")
	setIf(m, "contentMediaType", sc.ContentMediaType, sc.ContentMediaType != "")
	setIf(m, "contentEncoding", sc.ContentEncoding, sc.ContentEncoding != "")
	if len(sc.Enum) > 0 {
		enum := sc.Enum
		if c.s.v30 && sc.Nullable && !containsNil(enum) {
			enum = append(append([]any(nil), enum...), nil)
		}
		m["enum"] = enum
	}
}

func (c *conversion) types(sc *openapi3.Schema, m map[string]any) {
	types := sc.Type.Slice()
	if c.s.v30 && sc.Nullable && len(types) > 0 && !sc.Type.IncludesNull() {
		types = append(append([]string(nil), types...), openapi3.TypeNull)
	}
	switch len(types) {
	case 0:
	case 1:
		m["type"] = types[0]
	default:
		m["type"] = types
	}
}

func (c *conversion) bounds(sc *openapi3.Schema, m map[string]any) {
	setIf(m, "minimum", deref(sc.Min), sc.Min != nil)
	setIf(m, "maximum", deref(sc.Max), sc.Max != nil)
	switch {
	case sc.ExclusiveMin.Value != nil:
		m["exclusiveMinimum"] = *sc.ExclusiveMin.Value
	case sc.ExclusiveMin.IsTrue() && sc.Min != nil:
		m["exclusiveMinimum"] = *sc.Min
		delete(m, "minimum")
	}
	switch {
	case sc.ExclusiveMax.Value != nil:
		m["exclusiveMaximum"] = *sc.ExclusiveMax.Value
	case sc.ExclusiveMax.IsTrue() && sc.Max != nil:
		m["exclusiveMaximum"] = *sc.Max
		delete(m, "maximum")
	}
	setIf(m, "multipleOf", deref(sc.MultipleOf), sc.MultipleOf != nil)
	setIf(m, "minLength", sc.MinLength, sc.MinLength > 0)
	setIf(m, "maxLength", derefU(sc.MaxLength), sc.MaxLength != nil)
	setIf(m, "minItems", sc.MinItems, sc.MinItems > 0)
	setIf(m, "maxItems", derefU(sc.MaxItems), sc.MaxItems != nil)
	setIf(m, "uniqueItems", true, sc.UniqueItems)
	setIf(m, "minProperties", sc.MinProps, sc.MinProps > 0)
	setIf(m, "maxProperties", derefU(sc.MaxProps), sc.MaxProps != nil)
	setIf(m, "minContains", derefU(sc.MinContains), sc.MinContains != nil)
	setIf(m, "maxContains", derefU(sc.MaxContains), sc.MaxContains != nil)
	if len(sc.DependentRequired) > 0 {
		m["dependentRequired"] = sc.DependentRequired
	}
}

// children converts the subschemas.
func (c *conversion) children(sc *openapi3.Schema, m map[string]any, depth int) error {
	var err error
	one := func(key string, sr *openapi3.SchemaRef) {
		if sr == nil || err != nil {
			return
		}
		var v any
		if v, err = c.ref(sr, depth+1); err == nil {
			m[key] = v
		}
	}
	list := func(key string, srs openapi3.SchemaRefs) {
		if len(srs) == 0 || err != nil {
			return
		}
		out := make([]any, 0, len(srs))
		for _, sr := range srs {
			v, e := c.ref(sr, depth+1)
			if e != nil {
				err = e
				return
			}
			out = append(out, v)
		}
		m[key] = out
	}
	list("allOf", sc.AllOf)
	list("anyOf", sc.AnyOf)
	list("oneOf", sc.OneOf)
	list("prefixItems", sc.PrefixItems)
	one("not", sc.Not)
	one("items", sc.Items)
	one("contains", sc.Contains)
	one("propertyNames", sc.PropertyNames)
	one("if", sc.If)
	one("then", sc.Then)
	one("else", sc.Else)
	if err != nil {
		return err
	}
	if err := c.properties(sc, m, depth); err != nil {
		return err
	}
	for key, bs := range map[string]openapi3.BoolSchema{"additionalProperties": sc.AdditionalProperties,
		"unevaluatedProperties": sc.UnevaluatedProperties, "unevaluatedItems": sc.UnevaluatedItems} {
		switch {
		case bs.Has != nil:
			m[key] = *bs.Has
		case bs.Schema != nil:
			one(key, bs.Schema)
		}
	}
	for key, group := range map[string]openapi3.Schemas{"patternProperties": sc.PatternProperties, "dependentSchemas": sc.DependentSchemas} {
		if len(group) == 0 || err != nil {
			continue
		}
		out := map[string]any{}
		for k, sr := range group {
			v, e := c.ref(sr, depth+1)
			if e != nil {
				return e
			}
			out[k] = v
		}
		m[key] = out
	}
	return err
}

// properties converts an object's properties, leaving out those the
// direction never carries, and its required list accordingly.
func (c *conversion) properties(sc *openapi3.Schema, m map[string]any, depth int) error {
	if len(sc.Properties) == 0 {
		if len(sc.Required) > 0 {
			m["required"] = sc.Required
		}
		return nil
	}
	props := map[string]any{}
	dropped := map[string]bool{}
	for name, sr := range sc.Properties {
		if sr != nil && sr.Value != nil && (c.dir == input && sr.Value.ReadOnly || c.dir == output && sr.Value.WriteOnly) {
			dropped[name] = true
			continue
		}
		v, err := c.ref(sr, depth+1)
		if err != nil {
			return err
		}
		props[name] = v
	}
	m["properties"] = props
	var req []string
	for _, r := range sc.Required {
		if !dropped[r] {
			req = append(req, r)
		}
	}
	if len(req) > 0 {
		sort.Strings(req)
		m["required"] = req
	}
	return nil
}

func setIf(m map[string]any, key string, v any, ok bool) {
	if ok {
		m[key] = v
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefU(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func containsNil(list []any) bool {
	for _, v := range list {
		if v == nil {
			return true
		}
	}
	return false
}

// isObject reports whether a schema describes JSON objects only (a
// structuredContent as it is, rather than wrapped).
func isObject(sr *openapi3.SchemaRef, depth int) bool {
	if sr == nil || sr.Value == nil || depth > MaxSchemaDepth {
		return false
	}
	sc := sr.Value
	if sc.Type.Is(openapi3.TypeObject) && !sc.Nullable {
		return true
	}
	if sc.Type.IsEmpty() && len(sc.AllOf) > 0 {
		for _, sub := range sc.AllOf {
			if isObject(sub, depth+1) {
				return true
			}
		}
	}
	if sc.Type.IsEmpty() && len(sc.Properties) > 0 && len(sc.AnyOf)+len(sc.OneOf) == 0 {
		return true
	}
	for _, group := range []openapi3.SchemaRefs{sc.AnyOf, sc.OneOf} {
		if sc.Type.IsEmpty() && len(group) > 0 {
			all := true
			for _, sub := range group {
				all = all && isObject(sub, depth+1)
			}
			if all {
				return true
			}
		}
	}
	return false
}
