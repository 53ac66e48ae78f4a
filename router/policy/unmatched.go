package policy

import "strconv"

// A pattern that matches nothing is silent at run time: a misspelt deny
// hides nothing, a misspelt rate limit's tools glob limits nothing. The
// router asks these functions which patterns of a vhost match none of the
// names its backends publish, with the matcher enforcement uses (glob.go),
// so the report can never disagree with what the rules do.

// Pattern kinds, as an unmatched pattern names its place.
const (
	PatternAllow     = "allow"
	PatternDeny      = "deny"
	PatternRateTools = "rate_limit_tools"
)

// UnmatchedPattern is one configured pattern that matches none of the
// names given. Field is its place in the vhost's config: access[i].allow[j],
// access[i].deny[j] or rate_limits[i].tools[j].
type UnmatchedPattern struct {
	Field   string
	Kind    string
	Pattern string
}

// Unmatched lists the allow and deny patterns of every rule (scoped rules
// included) that match none of ids, in config order. ids are published
// names as access rules judge them: tool and prompt names, resource URIs
// and URI templates.
func (p *AccessPolicy) Unmatched(ids []string) []UnmatchedPattern {
	if p == nil {
		return nil
	}
	var out []UnmatchedPattern
	for i, r := range p.rules {
		at := "access[" + strconv.Itoa(i) + "]."
		for j, g := range r.allow {
			if !matchesAny(g, ids) {
				out = append(out, UnmatchedPattern{Field: at + "allow[" + strconv.Itoa(j) + "]", Kind: PatternAllow, Pattern: g.src})
			}
		}
		for j, g := range r.deny {
			if !matchesAny(g, ids) {
				out = append(out, UnmatchedPattern{Field: at + "deny[" + strconv.Itoa(j) + "]", Kind: PatternDeny, Pattern: g.src})
			}
		}
	}
	return out
}

// Unmatched lists the tools globs of every limit that match none of
// tools (published tool names), in config order.
func (p *RateLimitPolicy) Unmatched(tools []string) []UnmatchedPattern {
	if p == nil {
		return nil
	}
	var out []UnmatchedPattern
	for _, l := range p.limits {
		for j, g := range l.tools {
			if !matchesAny(g, tools) {
				out = append(out, UnmatchedPattern{Field: "rate_limits[" + strconv.Itoa(l.index) + "].tools[" + strconv.Itoa(j) + "]",
					Kind: PatternRateTools, Pattern: g.src})
			}
		}
	}
	return out
}

func matchesAny(g nameGlob, ids []string) bool {
	for _, id := range ids {
		if g.match(id) {
			return true
		}
	}
	return false
}
