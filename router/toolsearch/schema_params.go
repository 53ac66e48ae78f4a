package toolsearch

import "encoding/json"

// A tool's parameters say what it acts on ("owner", "repo", "issue_number",
// "channel_id") in words its name and description may not use: they are
// read from its inputSchema, a JSON Schema.

// maxParamDepth bounds how deep nested parameters are read.
const maxParamDepth = 3

// SchemaParams are the parameters of an inputSchema: its properties, and
// those of nested objects and arrays of objects, with their
// descriptions. A schema that is not an object has none.
func SchemaParams(schema json.RawMessage) []Param {
	return schemaParams(schema, nil, 0)
}

func schemaParams(schema json.RawMessage, out []Param, depth int) []Param {
	if depth >= maxParamDepth || len(schema) == 0 {
		return out
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for name, sub := range s.Properties {
		var p struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(sub, &p)
		out = append(out, Param{Name: name, Description: p.Description})
		out = schemaParams(sub, out, depth+1)
	}
	if len(s.Items) > 0 && s.Items[0] == '{' {
		out = schemaParams(s.Items, out, depth+1)
	}
	return out
}
