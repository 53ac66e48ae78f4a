package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// cfnEval evaluates the intrinsic functions the template uses, for one set
// of parameter values (unset ones take their Default) in region eu-west-1
// of account 123456789012; AWS::NoValue is nil.
type cfnEval struct {
	t      *testing.T
	tpl    map[string]any
	params map[string]any
}

func newCFNEval(t *testing.T, tpl map[string]any, set map[string]string) *cfnEval {
	params := map[string]any{"AWS::Partition": "aws", "AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012"}
	for name, p := range at(t, tpl, "Parameters").(map[string]any) {
		params[name] = p.(map[string]any)["Default"]
	}
	for k, v := range set {
		params[k] = v
	}
	return &cfnEval{t: t, tpl: tpl, params: params}
}

func (e *cfnEval) condition(name string) bool {
	return e.eval(at(e.t, e.tpl, "Conditions", name)).(bool)
}

func (e *cfnEval) eval(v any) any {
	e.t.Helper()
	switch v := v.(type) {
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			if x := e.eval(x); x != nil {
				out = append(out, x)
			}
		}
		return out
	case map[string]any:
		if len(v) == 1 {
			for k, x := range v {
				if r, ok := e.intrinsic(k, x); ok {
					return r
				}
			}
		}
		out := map[string]any{}
		for k, x := range v {
			if x := e.eval(x); x != nil {
				out[k] = x
			}
		}
		return out
	}
	return v
}

func (e *cfnEval) intrinsic(fn string, arg any) (any, bool) {
	args, _ := arg.([]any)
	switch fn {
	case "Ref":
		if arg == "AWS::NoValue" {
			return nil, true
		}
		v, ok := e.params[arg.(string)]
		if !ok {
			e.t.Fatalf("Ref %v: not a parameter", arg)
		}
		return v, true
	case "Condition":
		return e.condition(arg.(string)), true
	case "Fn::If":
		if e.condition(args[0].(string)) {
			return e.eval(args[1]), true
		}
		return e.eval(args[2]), true
	case "Fn::Equals":
		return fmt.Sprint(e.eval(args[0])) == fmt.Sprint(e.eval(args[1])), true
	case "Fn::Not":
		return !e.eval(args[0]).(bool), true
	case "Fn::And", "Fn::Or":
		all, anyOf := true, false
		for _, a := range args {
			b := e.eval(a).(bool)
			all, anyOf = all && b, anyOf || b
		}
		return map[bool]bool{true: all, false: anyOf}[fn == "Fn::And"], true
	case "Fn::Split":
		parts := strings.Split(e.eval(args[1]).(string), args[0].(string))
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, true
	case "Fn::Select":
		return e.eval(args[1]).([]any)[args[0].(int)], true
	case "Fn::Sub":
		s, local := "", map[string]any{}
		if str, ok := arg.(string); ok {
			s = str
		} else {
			s = args[0].(string)
			for k, x := range args[1].(map[string]any) {
				local[k] = e.eval(x)
			}
		}
		return regexp.MustCompile(`\$\{([^!}][^}]*)\}`).ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if v, ok := local[name]; ok {
				return fmt.Sprint(v)
			}
			v, ok := e.params[name]
			if !ok {
				e.t.Fatalf("Fn::Sub %q: ${%s} is neither a parameter nor local", s, name)
			}
			return fmt.Sprint(v)
		}), true
	}
	return nil, false
}
