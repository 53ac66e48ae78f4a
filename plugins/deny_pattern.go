package plugins

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router/hook"
)

// denyPattern refuses a call whose arguments (before the backend is
// called) or whose result (before the client sees it) holds a string
// value matching one of its patterns: -32030 naming the pattern.
type denyPattern struct {
	rule
	args, result bool
	patterns     []pattern
	m            matcher // all patterns at once (the prefilter)
}

func (d *denyPattern) init() {
	res := make([]*regexp.Regexp, len(d.patterns))
	for i, p := range d.patterns {
		res[i] = p.re
	}
	d.m = newMatcher(res)
}

// Pre checks the arguments: a tools/call's or prompts/get's `arguments`,
// a resources/read's `uri`.
func (d *denyPattern) Pre(_ context.Context, c *hook.Call) error {
	if !d.args {
		return nil
	}
	doc := arguments(c)
	if j := d.first(doc); j >= 0 {
		c.Decided(TypeDenyPattern, DecisionDeny)
		return d.deny(wire.CodePolicyDenied, "patterns["+strconv.Itoa(j)+"]", "the arguments match a denied pattern")
	}
	if !d.result {
		c.Decided(TypeDenyPattern, DecisionAllow)
	}
	return nil
}

// Post checks the result.
func (d *denyPattern) Post(_ context.Context, c *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	if !d.result {
		return result, nil
	}
	if j := d.first(result); j >= 0 {
		c.Decided(TypeDenyPattern, DecisionDeny)
		return nil, d.deny(wire.CodePolicyDenied, "patterns["+strconv.Itoa(j)+"]", "the result matches a denied pattern")
	}
	c.Decided(TypeDenyPattern, DecisionAllow)
	return result, nil
}

// first returns the index of the first pattern some string value of doc
// matches, or -1.
func (d *denyPattern) first(doc []byte) int {
	if len(doc) == 0 || !d.m.mayMatch(doc) {
		return -1
	}
	hit := -1
	eachString(doc, func(s []byte) ([]byte, bool) {
		for j, p := range d.patterns {
			if (hit < 0 || j < hit) && p.re.Match(s) {
				hit = j
				break
			}
		}
		return nil, false
	})
	return hit
}

// arguments is the part of a call's params that the client chose: a
// tools/call's or prompts/get's arguments, a resources/read's URI.
func arguments(c *hook.Call) []byte {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
		URI       json.RawMessage `json:"uri"`
	}
	if json.Unmarshal(c.Params, &p) != nil {
		return c.Params // not an object: judge all of it
	}
	if wire.MethodOf(c.Method).Arguments == "uri" {
		return p.URI
	}
	return p.Arguments
}
