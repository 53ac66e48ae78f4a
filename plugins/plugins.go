// Package plugins holds the gateway's built-in policy plugins: each is a
// router.Hook (and, for redact, a router.ProgressHook) configured per
// virtual host (`plugins:` in the config) and compiled once at load.
//
//   - deny_pattern refuses a call whose arguments, or whose result, has a
//     string matching one of its regular expressions;
//   - redact replaces matches of built-in secret and e-mail detectors and
//     its own regular expressions in results and progress messages;
//   - max_result_bytes refuses a result larger than its limit;
//   - validate_arguments checks a tools/call's arguments against the
//     inputSchema the backend lists for the tool, before the backend is
//     called, with a JSON Schema library (github.com/google/jsonschema-go).
//
// Plugins see JSON as the backend and client wrote it and match string
// values one by one (decoded, object keys left alone), so a pattern means
// the same whatever JSON escapes a message uses. A refusal is a JSON-RPC
// error that names the plugin and the rule (data {plugin, rule}) but never
// quotes what matched. Every decision is reported through
// router.HookCall.Decided (mcpgw_plugin_decisions_total).
package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpgw/gateway/router/hook"
)

// Plugin types, as written in the config.
const (
	TypeDenyPattern       = "deny_pattern"
	TypeRedact            = "redact"
	TypeMaxResultBytes    = "max_result_bytes"
	TypeValidateArguments = "validate_arguments"
)

// Decisions reported to the metrics (a closed set: they are labels).
const (
	DecisionAllow  = "allow"
	DecisionDeny   = "deny"
	DecisionRedact = "redact"
	DecisionError  = "error"
)

// Spec is one configured plugin. Which fields apply depends on Type.
type Spec struct {
	Type string
	// In is where deny_pattern looks: "arguments", "result" or "both".
	In string
	// Patterns are regular expressions (RE2 syntax) for deny_pattern and
	// redact.
	Patterns []string
	// Builtin names redact's built-in detector sets: "secrets", "email".
	Builtin []string
	// Limit is max_result_bytes' limit, in bytes of the result's JSON.
	Limit int64
}

// Where deny_pattern looks.
const (
	InArguments = "arguments"
	InResult    = "result"
	InBoth      = "both"
)

// SpecError is one problem of one plugin. Field is "type", "in",
// "patterns[j]", "builtin[j]", "limit", or another field name that does
// not apply to the type.
type SpecError struct {
	Plugin int
	Field  string
	Msg    string
}

func (e *SpecError) Error() string {
	at := "plugins[" + strconv.Itoa(e.Plugin) + "]"
	if e.Field != "" {
		at += "." + e.Field
	}
	return at + ": " + e.Msg
}

// Compile builds the hooks of a virtual host's plugins, in order. The
// error joins one *SpecError per problem: every regular expression is
// compiled, every field checked against the plugin's type.
func Compile(specs []Spec) ([]hook.Hook, error) {
	var errs []error
	hooks := make([]hook.Hook, 0, len(specs))
	for i, s := range specs {
		fail := func(field, format string, args ...any) {
			errs = append(errs, &SpecError{Plugin: i, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		notFor := func(field string, set bool) {
			if set {
				fail(field, "does not apply to type %s", s.Type)
			}
		}
		id := rule{index: i, plugin: s.Type}
		switch s.Type {
		case TypeDenyPattern:
			notFor("builtin", len(s.Builtin) > 0)
			notFor("limit", s.Limit != 0)
			d := &denyPattern{rule: id}
			switch s.In {
			case InArguments:
				d.args = true
			case InResult:
				d.result = true
			case InBoth:
				d.args, d.result = true, true
			case "":
				fail("in", "missing: give arguments, result or both")
			default:
				fail("in", "unknown value %q: give arguments, result or both", s.In)
			}
			if len(s.Patterns) == 0 {
				fail("patterns", "at least one pattern is required")
			}
			d.patterns = compilePatterns(s.Patterns, func(j int, err error) { fail("patterns["+strconv.Itoa(j)+"]", "%v", err) })
			d.init()
			hooks = append(hooks, d)
		case TypeRedact:
			notFor("in", s.In != "")
			notFor("limit", s.Limit != 0)
			r := &redact{rule: id}
			for j, b := range s.Builtin {
				set, ok := builtinDetectors(b)
				if !ok {
					fail("builtin["+strconv.Itoa(j)+"]", "unknown set %q: give secrets or email", b)
					continue
				}
				r.detectors = append(r.detectors, set...)
			}
			for j, p := range compilePatterns(s.Patterns, func(j int, err error) { fail("patterns["+strconv.Itoa(j)+"]", "%v", err) }) {
				r.detectors = append(r.detectors, detector{name: "patterns[" + strconv.Itoa(j) + "]", re: p.re})
			}
			if len(s.Builtin) == 0 && len(s.Patterns) == 0 {
				fail("", "redact needs builtin sets or patterns")
			}
			r.init()
			hooks = append(hooks, r)
		case TypeMaxResultBytes:
			notFor("in", s.In != "")
			notFor("patterns", len(s.Patterns) > 0)
			notFor("builtin", len(s.Builtin) > 0)
			if s.Limit < 1 {
				fail("limit", "must be at least 1 (bytes)")
			}
			hooks = append(hooks, &maxResultBytes{rule: id, limit: s.Limit})
		case TypeValidateArguments:
			notFor("in", s.In != "")
			notFor("patterns", len(s.Patterns) > 0)
			notFor("builtin", len(s.Builtin) > 0)
			notFor("limit", s.Limit != 0)
			hooks = append(hooks, newValidateArguments(id))
		case "":
			fail("type", "missing: give deny_pattern, redact, max_result_bytes or validate_arguments")
		default:
			fail("type", "unknown plugin %q: give deny_pattern, redact, max_result_bytes or validate_arguments", s.Type)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return hooks, nil
}

// rule names a plugin in refusals: its type and its place in the list.
type rule struct {
	index  int
	plugin string
}

// deny builds a plugin's refusal: code, a message naming the plugin and
// the rule (never what matched), and data {plugin, rule}.
func (r rule) deny(code int64, ruleName, format string, args ...any) *hook.Denial {
	at := "plugins[" + strconv.Itoa(r.index) + "]"
	if ruleName != "" {
		at += "." + ruleName
	}
	data, _ := json.Marshal(map[string]string{"plugin": r.plugin, "rule": at})
	return &hook.Denial{Code: code, Message: "denied by plugin " + r.plugin + " (" + at + "): " + fmt.Sprintf(format, args...), Data: data}
}
