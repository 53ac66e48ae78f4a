package openapi

// One operation as an MCP tool: its definition (name, description,
// inputSchema, outputSchema, annotations), rendered once at start-up, and
// what a call needs to build the request (the parameters' places and
// styles, the body's media type) and to read the answer.

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
)

// bodyArg is the argument that holds the request body.
const bodyArg = "body"

// Tool is one operation as a tool.
type Tool struct {
	name   string
	label  string // the operationId, else "METHOD /path": for messages
	method string
	path   string   // the path template, as written
	base   *url.URL // where the path is appended
	params []param
	body   *body // nil: no request body
	// wrap: structuredContent is {"result": value} (the 2xx schema is not
	// an object's, or there is none and the value is not an object).
	wrap      bool
	hasOutput bool
	accept    string
	queryKeys map[string]string // this operation's query API keys (security.go)
	def       json.RawMessage   // the tools/list entry
	input     json.RawMessage   // the inputSchema, for validation

	once     sync.Once
	resolved *jsonschema.Resolved
	errSch   error
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.name }

// Def is the tool's tools/list entry.
func (t *Tool) Def() json.RawMessage { return t.def }

// param is one parameter of an operation.
type param struct {
	name          string // as the API knows it
	in            string // path, query, header, cookie
	arg           string // its property in the arguments
	style         string
	explode       bool
	allowReserved bool
	asJSON        bool // content: application/json (the value sent as JSON text)
}

// bodyKind is how a request body is written.
type bodyKind int

const (
	bodyJSON      bodyKind = iota // application/json and +json
	bodyForm                      // application/x-www-form-urlencoded
	bodyMultipart                 // multipart/form-data
	bodyRaw                       // anything else: the argument is the body's text
)

type body struct {
	mediaType string
	kind      bodyKind
}

// builder turns operations into tools, sharing converted schemas.
type builder struct {
	doc     *openapi3.T
	schemas *schemas
}

func (b *builder) tool(op *operation) (*Tool, error) {
	t := &Tool{name: op.name, label: op.label(), method: op.method, path: op.path}
	in := &objectSchema{props: map[string]any{}}
	var deps [][]*openapi3.Schema
	ps, err := b.parameters(op, t, in, &deps)
	if err != nil {
		return nil, err
	}
	t.params = ps
	if err := b.requestBody(op, t, in, &deps); err != nil {
		return nil, err
	}
	inDefs, err := b.schemas.defsFor(input, deps...)
	if err != nil {
		return nil, err
	}
	inputSchema := in.render(inDefs)
	if t.input, err = json.Marshal(inputSchema); err != nil {
		return nil, err
	}
	def := map[string]any{"name": t.name, "inputSchema": json.RawMessage(t.input), "annotations": annotations(op)}
	if d := describe(op); d != "" {
		def["description"] = d
	}
	if s := strings.TrimSpace(op.op.Summary); s != "" {
		def["title"] = s
	}
	if out, err := b.outputSchema(op, t); err != nil {
		return nil, err
	} else if out != nil {
		def["outputSchema"] = out
		t.hasOutput = true
	}
	if t.def, err = json.Marshal(def); err != nil {
		return nil, err
	}
	if len(t.def) > MaxToolBytes {
		return nil, fmt.Errorf("its tool definition is %d bytes, more than %d", len(t.def), MaxToolBytes)
	}
	return t, nil
}

// objectSchema is an inputSchema being built.
type objectSchema struct {
	props    map[string]any
	required []string
}

func (o *objectSchema) render(defs map[string]json.RawMessage) map[string]any {
	s := map[string]any{"type": "object", "properties": o.props, "additionalProperties": false}
	if len(o.required) > 0 {
		sort.Strings(o.required)
		s["required"] = o.required
	}
	if len(defs) > 0 {
		s["$defs"] = defs
	}
	return s
}

// ignoredHeaders are header parameters OpenAPI says to ignore: the
// transport owns them.
var ignoredHeaders = map[string]bool{"Accept": true, "Content-Type": true, "Authorization": true}

// parameters collects the path item's and the operation's parameters
// (the operation's win by name and place), as properties of the input.
func (b *builder) parameters(op *operation, t *Tool, in *objectSchema, deps *[][]*openapi3.Schema) ([]param, error) {
	byKey := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{op.item.Parameters, op.op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			p := pr.Value
			if p.In == openapi3.ParameterInHeader && ignoredHeaders[http.CanonicalHeaderKey(p.Name)] {
				continue
			}
			key := p.In + "\x00" + p.Name
			if _, seen := byKey[key]; !seen {
				order = append(order, key)
			}
			byKey[key] = p
		}
	}
	var out []param
	taken := map[string]bool{bodyArg: op.op.RequestBody != nil}
	for _, key := range order {
		p := byKey[key]
		sm, err := p.SerializationMethod()
		if err != nil {
			return nil, err
		}
		pm := param{name: p.Name, in: p.In, arg: p.Name, style: sm.Style, explode: sm.Explode, allowReserved: p.AllowReserved}
		if taken[pm.arg] {
			pm.arg = p.In + "_" + p.Name // a name used twice: the later one says where it goes
		}
		if taken[pm.arg] {
			return nil, fmt.Errorf("parameter %q (in %s) collides with another argument", p.Name, p.In)
		}
		taken[pm.arg] = true
		sr := p.Schema
		if sr == nil {
			if mt := firstJSON(p.Content); mt != nil {
				sr, pm.asJSON = mt.Schema, true
			}
		}
		c, err := b.schemas.convert(sr, input)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
		}
		*deps = append(*deps, c.deps)
		in.props[pm.arg] = withDescription(c.value, p.Description, p.Deprecated)
		if p.Required || p.In == openapi3.ParameterInPath {
			in.required = append(in.required, pm.arg)
		}
		out = append(out, pm)
	}
	return out, nil
}

// requestBody picks the body's media type (JSON first, then forms, then
// anything as text) and adds the `body` argument.
func (b *builder) requestBody(op *operation, t *Tool, in *objectSchema, deps *[][]*openapi3.Schema) error {
	rb := op.op.RequestBody
	if rb == nil || rb.Value == nil || len(rb.Value.Content) == 0 {
		return nil
	}
	mtName, mt, kind := chooseBody(rb.Value.Content)
	t.body = &body{mediaType: mtName, kind: kind}
	var schema any = map[string]any{"type": "string"}
	if kind != bodyRaw || (mt != nil && mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Type.Is("string")) {
		var sr *openapi3.SchemaRef
		if mt != nil {
			sr = mt.Schema
		}
		c, err := b.schemas.convert(sr, input)
		if err != nil {
			return fmt.Errorf("request body: %w", err)
		}
		*deps = append(*deps, c.deps)
		schema = c.value
	}
	desc := rb.Value.Description
	if desc == "" {
		desc = "The request body (" + mtName + ")."
	}
	in.props[bodyArg] = withDescription(schema, desc, false)
	if rb.Value.Required {
		in.required = append(in.required, bodyArg)
	}
	return nil
}

// chooseBody picks the media type a body is sent as.
func chooseBody(content openapi3.Content) (string, *openapi3.MediaType, bodyKind) {
	names := make([]string, 0, len(content))
	for n := range content {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, want := range []bodyKind{bodyJSON, bodyForm, bodyMultipart} {
		for _, n := range names {
			if kindOf(n) == want {
				return n, content[n], want
			}
		}
	}
	n := names[0]
	for _, c := range names {
		if strings.HasPrefix(c, "text/") {
			n = c
			break
		}
	}
	if n == "*/*" {
		return "application/octet-stream", content[n], bodyRaw
	}
	return n, content[n], bodyRaw
}

func kindOf(mediaType string) bodyKind {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return bodyRaw
	}
	switch {
	case mt == "application/json", strings.HasSuffix(mt, "+json"):
		return bodyJSON
	case mt == "application/x-www-form-urlencoded":
		return bodyForm
	case mt == "multipart/form-data":
		return bodyMultipart
	}
	return bodyRaw
}

// firstJSON returns the JSON media type of a content map, or nil.
func firstJSON(content openapi3.Content) *openapi3.MediaType {
	names := make([]string, 0, len(content))
	for n := range content {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if kindOf(n) == bodyJSON {
			return content[n]
		}
	}
	return nil
}

// outputSchema is the 2xx JSON response's schema (the lowest code that
// has one), wrapped under "result" when it is not an object's; nil when
// no 2xx response has a JSON schema.
func (b *builder) outputSchema(op *operation, t *Tool) (any, error) {
	t.accept = "application/json"
	if op.op.Responses == nil {
		t.wrap = true
		return nil, nil
	}
	codes := make([]string, 0, op.op.Responses.Len())
	for code := range op.op.Responses.Map() {
		if n, err := strconv.Atoi(code); (err == nil && n >= 200 && n < 300) || strings.EqualFold(code, "2XX") {
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	var accept []string
	var chosen *openapi3.SchemaRef
	for _, code := range codes {
		r := op.op.Responses.Value(code)
		if r == nil || r.Value == nil {
			continue
		}
		for n := range r.Value.Content {
			if !containsStr(accept, n) {
				accept = append(accept, n)
			}
		}
		if mt := firstJSON(r.Value.Content); mt != nil && mt.Schema != nil && chosen == nil {
			chosen = mt.Schema
		}
	}
	if len(accept) > 0 {
		sort.Slice(accept, func(i, j int) bool { return kindOf(accept[i]) == bodyJSON && kindOf(accept[j]) != bodyJSON })
		t.accept = strings.Join(accept, ", ")
	}
	if chosen == nil {
		t.wrap = true
		return nil, nil
	}
	c, err := b.schemas.convert(chosen, output)
	if err != nil {
		return nil, fmt.Errorf("response schema: %w", err)
	}
	defs, err := b.schemas.defsFor(output, c.deps)
	if err != nil {
		return nil, fmt.Errorf("response schema: %w", err)
	}
	var s map[string]any
	if isObject(chosen, 0) {
		if m, ok := c.value.(map[string]any); ok {
			s = m
		}
	}
	if s == nil {
		t.wrap = true
		s = map[string]any{"type": "object", "properties": map[string]any{"result": c.value}, "required": []string{"result"}}
	} else {
		cp := make(map[string]any, len(s)+1)
		for k, v := range s {
			cp[k] = v
		}
		s = cp
	}
	if len(defs) > 0 {
		s["$defs"] = defs
	}
	return s, nil
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// withDescription adds a description (and deprecation) to a converted
// schema; a reference keeps its $ref beside them (2020-12 allows it).
func withDescription(v any, desc string, deprecated bool) any {
	m, ok := v.(map[string]any)
	if !ok || (desc == "" && !deprecated) {
		return v
	}
	cp := make(map[string]any, len(m)+2)
	for k, e := range m {
		cp[k] = e
	}
	if desc != "" {
		cp["description"] = desc
	}
	if deprecated {
		cp["deprecated"] = true
	}
	return cp
}

// describe is a tool's description: the summary and description.
func describe(op *operation) string {
	parts := []string{}
	for _, s := range []string{op.op.Summary, op.op.Description} {
		if s = strings.TrimSpace(s); s != "" && !containsStr(parts, s) {
			parts = append(parts, s)
		}
	}
	d := strings.Join(parts, "\n\n")
	if op.op.Deprecated {
		d = strings.TrimSpace("Deprecated. " + d)
	}
	return d
}

// annotations are the hints the HTTP method gives.
func annotations(op *operation) map[string]any {
	a := map[string]any{"openWorldHint": true}
	if s := strings.TrimSpace(op.op.Summary); s != "" {
		a["title"] = s
	}
	switch op.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		a["readOnlyHint"] = true
	case http.MethodPost:
		a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"] = false, false, false
	case http.MethodPut:
		a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"] = false, true, true
	case http.MethodPatch:
		a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"] = false, true, false
	case http.MethodDelete:
		a["readOnlyHint"], a["destructiveHint"], a["idempotentHint"] = false, true, true
	}
	return a
}

// Validate checks arguments against the tool's inputSchema, with the
// JSON Schema library validate_arguments uses.
func (t *Tool) Validate(args map[string]any) error {
	t.once.Do(func() {
		var s jsonschema.Schema
		if err := json.Unmarshal(t.input, &s); err != nil {
			t.errSch = err
			return
		}
		t.resolved, t.errSch = s.Resolve(nil)
	})
	if t.errSch != nil {
		return fmt.Errorf("%w: %v", errSchema, t.errSch)
	}
	return t.resolved.Validate(args)
}

// errSchema marks a tool whose own inputSchema does not compile.
var errSchema = errors.New("the tool's inputSchema cannot be used")
