package main

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decodeCFN decodes a CloudFormation/SAM YAML template into plain Go values
// (map[string]any, []any, string, int, float64, bool, nil), turning the
// short-form intrinsic tags into their long JSON form, as CloudFormation
// does: `!Ref X` becomes {"Ref": "X"}, `!GetAtt A.B` {"Fn::GetAtt": ["A",
// "B"]}, `!Condition C` {"Condition": "C"}, and any other `!Name v`
// {"Fn::Name": v}.
func decodeCFN(data []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("not a single YAML document")
	}
	v, err := cfnValue(doc.Content[0])
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template is not a mapping")
	}
	return m, nil
}

func cfnValue(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return nil, fmt.Errorf("line %d: YAML aliases are not allowed in CloudFormation templates", n.Line)
	}
	v, err := plainValue(n)
	if err != nil {
		return nil, err
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v, nil
	}
	name := strings.TrimPrefix(tag, "!")
	switch name {
	case "Ref":
		return map[string]any{"Ref": v}, nil
	case "Condition":
		return map[string]any{"Condition": v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok { // !GetAtt Resource.Attribute[.More]
			res, attr, ok := strings.Cut(s, ".")
			if !ok {
				return nil, fmt.Errorf("line %d: !GetAtt %q lacks an attribute", n.Line, s)
			}
			return map[string]any{"Fn::GetAtt": []any{res, attr}}, nil
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	default:
		return map[string]any{"Fn::" + name: v}, nil
	}
}

// plainValue decodes n ignoring its own tag (but not its children's).
func plainValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: non-scalar key", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			return n.Value, nil // an intrinsic's argument: a string
		}
		switch n.ShortTag() {
		case "!!int":
			if i, err := strconv.Atoi(n.Value); err == nil {
				return i, nil
			}
		case "!!float":
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
				return f, nil
			}
		case "!!bool":
			return n.Value == "true" || n.Value == "True" || n.Value == "TRUE", nil
		case "!!null":
			return nil, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}
