package config

import (
	"errors"
	"strings"

	"github.com/mcpgw/gateway/router/policy"
)

// rawAccessRule is one rule of a virtual host's `access` list.
type rawAccessRule struct {
	// A CEL expression over claims (the token's) and vhost; the rule
	// applies when it holds. Absent: always (then no rule may follow).
	When string `yaml:"when"`
	// Published tool, prompt and resource names, URIs and URI templates
	// the rule allows; '*' is the only wildcard.
	Allow []string `yaml:"allow"`
	// Names taken back out of allow (needs allow).
	Deny []string `yaml:"deny"`
	// Scopes the caller's token must grant for the rule to decide
	// (step-up: a name only this rule shows is refused with 403 and the
	// scopes to ask for).
	Scopes []string `yaml:"scopes"`
}

// access compiles a virtual host's access rules (router.CompileAccess:
// every CEL expression and pattern) and reports each problem at its field,
// e.g. virtual_hosts.demo.access[1].when, with its line. nil rules (the
// field absent or null) mean no access control; an empty list hides
// everything, as a list whose rules no caller meets would.
func (v *validator) access(vhostPath string, raw []*rawAccessRule) *policy.AccessPolicy {
	if raw == nil {
		return nil
	}
	path := joinPath(vhostPath, "access")
	rules := make([]policy.AccessRule, len(raw))
	for i, r := range raw {
		if r == nil {
			v.errf(indexPath(path, i), "empty rule: give allow (and when, deny)")
			return nil
		}
		rules[i] = policy.AccessRule{When: r.When, Allow: r.Allow, Deny: r.Deny, Scopes: r.Scopes}
	}
	p, err := policy.CompileAccess(rules)
	if err == nil {
		return p
	}
	var multi interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &multi) {
		errs = multi.Unwrap()
	}
	for _, e := range errs {
		var re *policy.AccessRuleError
		if !errors.As(e, &re) {
			v.errf(path, "%s", errMsg(e))
			continue
		}
		at := indexPath(path, re.Rule)
		if re.Field != "" {
			at += "." + re.Field
		}
		// CEL messages may quote the expression: the operator's own
		// text, never a secret, but kept to one line.
		v.errf(at, "%s", strings.TrimSpace(oneLine(re.Msg)))
	}
	return nil
}
