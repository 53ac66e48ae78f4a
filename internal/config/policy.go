package config

import (
	"errors"
	"strings"

	"github.com/mcpgw/gateway/plugins"
	"github.com/mcpgw/gateway/router/hook"
	"github.com/mcpgw/gateway/router/policy"
)

// rawPlugin is one entry of a virtual host's `plugins` list. Which fields
// apply depends on type (plugins.Compile says when one does not).
type rawPlugin struct {
	// validate_arguments: tools/call arguments against the tool's
	// inputSchema; deny_pattern: refuse string values matching a regular
	// expression; redact: replace matches in results; max_result_bytes:
	// refuse a larger result. Required.
	Type string `yaml:"type" jsonschema:"required,enum=validate_arguments,enum=deny_pattern,enum=redact,enum=max_result_bytes"`
	// deny_pattern only: where it looks, arguments, result or both.
	// Required there.
	In string `yaml:"in" jsonschema:"enum=arguments,enum=result,enum=both"`
	// deny_pattern and redact: regular expressions (RE2).
	Patterns []string `yaml:"patterns"`
	// redact only: built-in detector sets, secrets (AWS keys, GitHub and
	// Slack tokens, private keys, JWTs) and email.
	Builtin []string `yaml:"builtin" jsonschema:"enum=secrets,enum=email"`
	// max_result_bytes only: the largest result, in bytes of its JSON.
	// Required there.
	Limit *int64 `yaml:"limit" jsonschema:"minimum=1"`
}

// rawRateLimit is one entry of a virtual host's `rate_limits` list.
type rawRateLimit struct {
	// Whose requests one counter counts: principal (each caller),
	// principal_tool (each caller and tool) or vhost (every caller
	// together). Required.
	Per string `yaml:"per" jsonschema:"required,enum=principal,enum=principal_tool,enum=vhost"`
	// Published tool names ('*' globs) the limit counts; default all.
	Tools []string `yaml:"tools"`
	// Requests per window: a burst of limit, then one per window/limit.
	// Required.
	Limit *int64 `yaml:"limit" jsonschema:"required,minimum=1"`
	// The window the limit counts over, 1s to 24h. Required.
	Window *rawDuration `yaml:"window" jsonschema:"required"`
	// Above 1, each instance counts locally and takes that many at a time
	// from the store (fewer round trips, less exact).
	Batch *int64 `yaml:"batch" jsonschema:"default=1,minimum=1"`
}

// plugins compiles a virtual host's plugins (plugins.Compile: every
// regular expression, every field against the plugin's type) and reports
// each problem at its field, e.g. virtual_hosts.demo.plugins[0].patterns[1],
// with its line.
func (v *validator) plugins(vhostPath string, raw []*rawPlugin) []hook.Hook {
	if len(raw) == 0 {
		return nil
	}
	path := joinPath(vhostPath, "plugins")
	specs := make([]plugins.Spec, len(raw))
	for i, p := range raw {
		if p == nil {
			v.errf(indexPath(path, i), "empty plugin: give its type")
			return nil
		}
		specs[i] = plugins.Spec{Type: p.Type, In: p.In, Patterns: p.Patterns, Builtin: p.Builtin}
		if p.Limit != nil {
			specs[i].Limit = *p.Limit
			if specs[i].Limit == 0 {
				specs[i].Limit = -1 // set to 0: "must be at least 1", or "does not apply"
			}
		}
	}
	hooks, err := plugins.Compile(specs)
	if err == nil {
		return hooks
	}
	for _, e := range unjoin(err) {
		var se *plugins.SpecError
		if !errors.As(e, &se) {
			v.errf(path, "%s", errMsg(e))
			continue
		}
		at := indexPath(path, se.Plugin)
		if se.Field != "" {
			at += "." + se.Field
		}
		v.errf(at, "%s", strings.TrimSpace(oneLine(se.Msg)))
	}
	return nil
}

// rateLimits checks a virtual host's rate limits (router.CompileRateLimits)
// and reports each problem at its field with its line.
func (v *validator) rateLimits(vhostPath string, raw []*rawRateLimit) *policy.RateLimitPolicy {
	if len(raw) == 0 {
		return nil
	}
	path := joinPath(vhostPath, "rate_limits")
	limits := make([]policy.RateLimit, len(raw))
	ok := true
	reported := map[int]bool{} // limits whose limit or window is already reported
	for i, r := range raw {
		at := indexPath(path, i)
		if r == nil {
			v.errf(at, "empty rate limit: give per, limit and window")
			return nil
		}
		limits[i] = policy.RateLimit{Per: r.Per, Tools: r.Tools}
		if r.Batch != nil {
			limits[i].Batch = *r.Batch
			if *r.Batch < 1 {
				limits[i].Batch = -1 // reported by CompileRateLimits
			}
		}
		n := len(v.errs)
		if r.Limit == nil {
			v.errf(joinPath(at, "limit"), "missing: how many requests per window")
		} else {
			limits[i].Limit = *r.Limit
		}
		if r.Window == nil {
			v.errf(joinPath(at, "window"), "missing: the window the limit counts over (e.g. 1m)")
		} else {
			limits[i].Window = v.duration(joinPath(at, "window"), r.Window, 0, 0)
		}
		if len(v.errs) > n {
			ok, reported[i] = false, true
		}
	}
	p, err := policy.CompileRateLimits(limits)
	if err == nil {
		if !ok {
			return nil
		}
		return p
	}
	for _, e := range unjoin(err) {
		var re *policy.RateLimitError
		if !errors.As(e, &re) {
			v.errf(path, "%s", errMsg(e))
			continue
		}
		at := indexPath(path, re.Limit)
		if re.Field != "" {
			if reported[re.Limit] && (re.Field == "limit" || re.Field == "window") {
				continue // already reported: missing, or not a duration
			}
			at += "." + re.Field
		}
		v.errf(at, "%s", re.Msg)
	}
	return nil
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		return multi.Unwrap()
	}
	return []error{err}
}
