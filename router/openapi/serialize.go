package openapi

// Parameter values written as OpenAPI's style and explode say (the table
// in the specification's Parameter Object: simple, label and matrix in
// paths; form, spaceDelimited, pipeDelimited and deepObject in queries;
// simple in headers; form in cookies). Every value is percent-encoded
// but for the unreserved characters, so a '/' in a path value stays in
// its segment and a ',' inside an array item is not taken for the
// delimiter; allowReserved keeps RFC 3986's reserved characters in a
// query value as they are.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// shape is a decoded argument: a primitive's text, an array's items or
// an object's members (sorted by name, for stable requests).
type shape struct {
	kind   int // primitive, array, object
	prim   string
	items  []string
	fields [][2]string
}

const (
	kindPrimitive = iota
	kindArray
	kindObject
)

// shapeOf decodes an argument for serialization; null is absent. Items
// and members that are themselves arrays or objects are written as JSON
// text: OpenAPI defines no style for them.
func shapeOf(raw json.RawMessage, asJSON bool) (shape, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return shape{}, false, nil
	}
	if asJSON {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return shape{}, false, err
		}
		return shape{kind: kindPrimitive, prim: b.String()}, true, nil
	}
	switch raw[0] {
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return shape{}, false, err
		}
		s := shape{kind: kindArray}
		for _, it := range items {
			s.items = append(s.items, primitiveText(it))
		}
		return s, true, nil
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return shape{}, false, err
		}
		s := shape{kind: kindObject}
		for k, v := range m {
			if string(bytes.TrimSpace(v)) == "null" {
				continue
			}
			s.fields = append(s.fields, [2]string{k, primitiveText(v)})
		}
		sort.Slice(s.fields, func(i, j int) bool { return s.fields[i][0] < s.fields[j][0] })
		return s, true, nil
	}
	return shape{kind: kindPrimitive, prim: primitiveText(raw)}, true, nil
}

// primitiveText is a JSON value's text in a URL: a string unquoted, a
// number or boolean as written, anything else as compact JSON.
func primitiveText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// pathValue writes a path parameter's value (simple, label, matrix).
func pathValue(p param, s shape) (string, error) {
	esc := func(v string) string { return escape(v, false) }
	switch p.style {
	case "simple", "":
		return joinShape(s, esc, ",", ",", "=", p.explode), nil
	case "label":
		sep := ","
		if p.explode {
			sep = "."
		}
		return "." + joinShape(s, esc, sep, sep, "=", p.explode), nil
	case "matrix":
		name := esc(p.name)
		switch s.kind {
		case kindPrimitive:
			return ";" + name + "=" + esc(s.prim), nil
		case kindArray:
			if p.explode {
				var b strings.Builder
				for _, it := range s.items {
					b.WriteString(";" + name + "=" + esc(it))
				}
				return b.String(), nil
			}
			return ";" + name + "=" + joinShape(s, esc, ",", ",", "=", false), nil
		default:
			if p.explode {
				return ";" + joinShape(s, esc, ";", ";", "=", true), nil
			}
			return ";" + name + "=" + joinShape(s, esc, ",", ",", "=", false), nil
		}
	}
	return "", fmt.Errorf("path parameter %q has style %q, which is not defined for paths", p.name, p.style)
}

// joinShape writes a value's items or members: items joined by itemSep;
// members as k=v joined by itemSep when exploded, else k,v joined by
// pairSep.
func joinShape(s shape, esc func(string) string, itemSep, pairSep, kv string, explode bool) string {
	switch s.kind {
	case kindArray:
		out := make([]string, len(s.items))
		for i, it := range s.items {
			out[i] = esc(it)
		}
		return strings.Join(out, itemSep)
	case kindObject:
		out := make([]string, 0, 2*len(s.fields))
		for _, f := range s.fields {
			if explode {
				out = append(out, esc(f[0])+kv+esc(f[1]))
			} else {
				out = append(out, esc(f[0]), esc(f[1]))
			}
		}
		if explode {
			return strings.Join(out, itemSep)
		}
		return strings.Join(out, pairSep)
	}
	return esc(s.prim)
}

// queryPairs writes a query (or form) parameter as name=value pairs,
// already encoded.
func queryPairs(p param, s shape) ([]string, error) {
	esc := func(v string) string { return escape(v, p.allowReserved) }
	name := escape(p.name, false)
	switch p.style {
	case "form", "":
		switch {
		case s.kind == kindPrimitive:
			return []string{name + "=" + esc(s.prim)}, nil
		case s.kind == kindArray && p.explode:
			out := make([]string, len(s.items))
			for i, it := range s.items {
				out[i] = name + "=" + esc(it)
			}
			return out, nil
		case s.kind == kindObject && p.explode:
			out := make([]string, len(s.fields))
			for i, f := range s.fields {
				out[i] = escape(f[0], false) + "=" + esc(f[1])
			}
			return out, nil
		}
		return []string{name + "=" + joinShape(s, esc, ",", ",", "=", false)}, nil
	case "spaceDelimited", "pipeDelimited":
		sep := "%20"
		if p.style == "pipeDelimited" {
			sep = "|"
		}
		if s.kind == kindPrimitive || p.explode {
			return queryPairs(param{name: p.name, style: "form", explode: true, allowReserved: p.allowReserved}, s)
		}
		return []string{name + "=" + joinShape(s, esc, sep, sep, "=", false)}, nil
	case "deepObject":
		if s.kind != kindObject {
			return queryPairs(param{name: p.name, style: "form", explode: true, allowReserved: p.allowReserved}, s)
		}
		out := make([]string, len(s.fields))
		for i, f := range s.fields {
			out[i] = name + "%5B" + escape(f[0], false) + "%5D=" + esc(f[1])
		}
		return out, nil
	}
	return nil, fmt.Errorf("query parameter %q has style %q, which is not defined for queries", p.name, p.style)
}

// headerValue writes a header parameter's value (style simple). Header
// values are not percent-encoded; line breaks are refused.
func headerValue(p param, s shape) (string, error) {
	v := joinShape(s, func(x string) string { return x }, ",", ",", "=", p.explode)
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("%w: header parameter %q holds a line break", ErrInvalidArguments, p.name)
	}
	return v, nil
}

// cookieValue writes a cookie parameter (style form) as name=value.
func cookieValue(p param, s shape) string {
	esc := func(v string) string { return escape(v, false) }
	if s.kind == kindPrimitive {
		return p.name + "=" + esc(s.prim)
	}
	return p.name + "=" + joinShape(s, esc, ",", ",", "=", false)
}

// escape percent-encodes all but RFC 3986's unreserved characters (and
// its reserved ones too when allowReserved).
func escape(s string, allowReserved bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || allowReserved && strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
