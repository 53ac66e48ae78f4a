// Package policy compiles a virtual host's access rules and rate limits
// and answers what they decide for one caller: which published names it
// sees (View), which limits count a call and under which counter. It
// knows the published names only as strings; the router applies the
// decisions to lists, routed calls and notifications, and counts.
package policy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Access by identity. A virtual host may carry access rules; once it does,
// a caller sees only the published names (tools and prompts by name,
// resources by URI, resource templates by URI template, all as the client
// sees them: prefixed or aliased) that the rule deciding for it allows.
//
// The rule that decides is the first whose `when` (a CEL expression over
// the caller's token claims and the vhost name) holds; a rule without
// `when` always holds, and when no rule holds the caller sees nothing. A
// name is visible when it matches an `allow` pattern and no `deny`
// pattern (glob.go).
//
// The decision is taken once per request, when the request first needs
// it, and kept with the request: CEL runs once per rule at most, never per item;
// filtering a list is then only pattern matching. Lists are filtered after
// the list cache (which holds backend pages shared by every caller) and
// after the merge, per request; a backend none of whose names the caller
// could see is not asked at all. A routed request for a hidden name is
// refused exactly like one for a name no backend owns (router unknownIdentifier),
// before any hook or backend sees it, so the answer says nothing about
// whether the hidden thing exists.
//
// The rules are compiled with the rest of the routing table, which a
// config reload replaces whole: a request decides on the table it
// started with, and a policy that does not compile never reaches the
// router (config validation compiles it first and keeps the running one).

// AccessRule is one rule of a virtual host's access policy, as configured.
type AccessRule struct {
	// When is a CEL expression over `claims` (the caller's JWT claims; an
	// empty map in auth mode none) and `vhost` that must be boolean; empty
	// always holds. An evaluation error (a claim the token lacks, a claim
	// of another type) means the rule does not hold.
	When string
	// Allow and Deny are name patterns: '*' matches any run of characters.
	Allow, Deny []string
	// Scopes, when set, are what the caller's token must grant (its scope
	// or scp claim) for the rule to decide: a caller the rule's When
	// holds for but whose token lacks one is decided by a later rule, and
	// a name only this rule would show it is listed but refused with the
	// scopes to ask for (step-up authorization).
	Scopes []string
}

// AccessPolicy is a virtual host's compiled access rules (CompileAccess).
// A nil policy lets every caller see every name. It is immutable and safe
// for concurrent use.
type AccessPolicy struct {
	source []AccessRule
	rules  []accessRule
	// claims: some rule's `when` reads the claims, so what a caller sees
	// depends on who it is (2026-07-28 results are then cacheScope private).
	claims bool
}

type accessRule struct {
	when        cel.Program // nil: always holds
	allow, deny []nameGlob
	scopes      []string
}

// AccessRuleError is one problem of one rule. Field is "when",
// "allow[i]", "deny[i]", or "" for the rule as a whole.
type AccessRuleError struct {
	Rule  int
	Field string
	Msg   string
}

func (e *AccessRuleError) Error() string {
	at := "access[" + strconv.Itoa(e.Rule) + "]"
	if e.Field != "" {
		at += "." + e.Field
	}
	return at + ": " + e.Msg
}

// accessCostLimit bounds one evaluation of a `when`. Claims come from
// tokens the gateway trusts, but an expression that iterates them should
// still fail (and so not hold) rather than spin on a huge claim.
const accessCostLimit = 100_000

// CompileAccess compiles a virtual host's rules: every CEL expression,
// which must be boolean, and every pattern. The error joins one
// *AccessRuleError per problem.
func CompileAccess(rules []AccessRule) (*AccessPolicy, error) {
	env, err := cel.NewEnv(
		cel.Variable("claims", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("vhost", cel.StringType),
		// JSON numbers in claims are doubles: let `claims.level >= 2` work.
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
	)
	if err != nil {
		return nil, fmt.Errorf("access: building the CEL environment: %w", err)
	}
	p := &AccessPolicy{source: cloneRules(rules), rules: make([]accessRule, len(rules))}
	var errs []error
	fail := func(i int, field, format string, args ...any) {
		errs = append(errs, &AccessRuleError{Rule: i, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, r := range rules {
		if strings.TrimSpace(r.When) != "" {
			prg, claims, msg := compileWhen(env, r.When)
			if msg != "" {
				fail(i, "when", "%s", msg)
			}
			p.rules[i].when = prg
			p.claims = p.claims || claims
		} else if i < len(rules)-1 && len(r.Scopes) == 0 {
			fail(i+1, "", "can never apply: rule %d has no `when`, so it decides for every caller", i)
		}
		for j, src := range r.Allow {
			g, err := compileGlob(src)
			if err != nil {
				fail(i, "allow["+strconv.Itoa(j)+"]", "%v", err)
			}
			p.rules[i].allow = append(p.rules[i].allow, g)
		}
		for j, src := range r.Deny {
			g, err := compileGlob(src)
			if err != nil {
				fail(i, "deny["+strconv.Itoa(j)+"]", "%v", err)
			}
			p.rules[i].deny = append(p.rules[i].deny, g)
		}
		p.rules[i].scopes = slices.Clone(r.Scopes)
		for j, sc := range r.Scopes {
			if sc == "" || strings.ContainsAny(sc, " \t\"\\") {
				fail(i, "scopes["+strconv.Itoa(j)+"]", "%q is not a scope (a word without spaces, quotes or backslashes)", sc)
			}
		}
		if len(r.Scopes) > 0 && len(r.Allow) == 0 {
			fail(i, "scopes", "has no effect without allow: the scopes grant what allow names")
		}
		if len(r.Deny) > 0 && len(r.Allow) == 0 {
			fail(i, "deny", "has no effect without allow: a name must match allow to be visible (add allow: [\"*\"] to show everything else)")
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// compileWhen compiles one expression. msg says what is wrong ("" when
// nothing is); claims reports whether the expression reads the claims.
func compileWhen(env *cel.Env, src string) (prg cel.Program, claims bool, msg string) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			m := e.Message
			if loc := e.Location; loc != nil && loc.Line() > 0 {
				if loc.Line() > 1 {
					m += fmt.Sprintf(" (expression line %d, column %d)", loc.Line(), loc.Column()+1)
				} else {
					m += fmt.Sprintf(" (column %d)", loc.Column()+1)
				}
			}
			msgs = append(msgs, m)
		}
		return nil, false, "invalid CEL expression: " + strings.Join(msgs, "; ")
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, false, fmt.Sprintf("must be a boolean CEL expression, not %s (compare a claim explicitly, e.g. claims.admin == true)", t)
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "claims" {
			claims = true
		}
	}
	prg, err := env.Program(ast, cel.CostLimit(accessCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, false, "invalid CEL expression: " + err.Error()
	}
	return prg, claims, ""
}

func cloneRules(rules []AccessRule) []AccessRule {
	out := make([]AccessRule, len(rules))
	for i, r := range rules {
		out[i] = AccessRule{When: r.When, Allow: slices.Clone(r.Allow), Deny: slices.Clone(r.Deny), Scopes: slices.Clone(r.Scopes)}
	}
	return out
}

// Rules returns the rules the policy was compiled from.
func (p *AccessPolicy) Rules() []AccessRule {
	if p == nil {
		return nil
	}
	return cloneRules(p.source)
}

// DependsOnClaims reports whether what a caller sees depends on its
// claims, so a result filtered by the policy must not be shared between
// callers.
func (p *AccessPolicy) DependsOnClaims() bool { return p != nil && p.claims }

// Equal reports whether two policies have the same rules (for reload:
// a changed policy changes the vhost's lists).
func (p *AccessPolicy) Equal(o *AccessPolicy) bool {
	if p == nil || o == nil {
		return p == o
	}
	return reflect.DeepEqual(p.source, o.source)
}

// View is what one request may see: the policy's decision for its
// caller. The zero View sees everything.
type View struct {
	policy *AccessPolicy // nil: everything is visible
	rule   *accessRule   // the rule that decided; nil under a policy: nothing is visible
	// stepUp is the first rule that held for the caller but needs scopes
	// its token lacks (ahead of the deciding rule); nil when none did.
	stepUp *accessRule
}

// Decide runs the rules' conditions for one caller, first to last, until
// one holds.
func (p *AccessPolicy) Decide(vhost string, claims map[string]any) View {
	if p == nil {
		return View{}
	}
	if claims == nil {
		claims = map[string]any{}
	}
	var act interpreter.Activation
	view := View{policy: p}
	for i := range p.rules {
		r := &p.rules[i]
		holds := r.when == nil
		if !holds {
			if act == nil {
				var err error
				if act, err = interpreter.NewActivation(map[string]any{"claims": claims, "vhost": vhost}); err != nil {
					return view
				}
			}
			out, _, err := r.when.Eval(act)
			holds = err == nil && out.Value() == true
		}
		switch {
		case !holds:
		case !grants(claims, r.scopes):
			if view.stepUp == nil {
				view.stepUp = r
			}
		default:
			view.rule = r
			return view
		}
	}
	return view
}

// grants reports whether claims grant every scope: the token's scope
// claim (space-separated, RFC 9068 and 8693) or scp (a list or a string,
// as Entra ID and Okta spell it).
func grants(claims map[string]any, scopes []string) bool {
	if len(scopes) == 0 {
		return true
	}
	var have []string
	for _, name := range []string{"scope", "scp"} {
		switch c := claims[name].(type) {
		case string:
			have = append(have, strings.Fields(c)...)
		case []any:
			for _, e := range c {
				if s, ok := e.(string); ok {
					have = append(have, s)
				}
			}
		}
	}
	for _, sc := range scopes {
		if !slices.Contains(have, sc) {
			return false
		}
	}
	return true
}

// Scopes lists every scope a rule of the policy asks for, sorted: what
// the vhost's metadata tells clients they may request.
func (p *AccessPolicy) Scopes() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, r := range p.rules {
		for _, sc := range r.scopes {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Listed reports whether a name is shown to the request: visible, or
// visible once the token grants the scopes of the rule ahead of the
// deciding one (StepUp names them). A name not listed is answered as
// unknown.
func (a View) Listed(id string) bool {
	return a.Visible(id) || (a.stepUp != nil && a.stepUp.shows(id))
}

// StepUp returns the scopes the caller's token needs for a listed name it
// may not use yet, or nil when it may (or when nothing would show it).
func (a View) StepUp(id string) []string {
	if a.stepUp == nil || a.Visible(id) || !a.stepUp.shows(id) {
		return nil
	}
	return slices.Clone(a.stepUp.scopes)
}

func (r *accessRule) shows(id string) bool { return anyMatch(r.allow, id) && !anyMatch(r.deny, id) }

// All reports whether nothing is hidden from the request.
func (a View) All() bool { return a.policy == nil }

// Visible reports whether a published name (or URI, or URI template) is
// visible to the request.
func (a View) Visible(id string) bool {
	switch {
	case a.policy == nil:
		return true
	case a.rule == nil:
		return false
	}
	return a.rule.shows(id)
}

func anyMatch(globs []nameGlob, s string) bool {
	for _, g := range globs {
		if g.match(s) {
			return true
		}
	}
	return false
}

// Policy is the policy that decided (nil for the zero View): a request
// keeps its View only while the vhost's policy is the same.
func (a View) Policy() *AccessPolicy { return a.policy }

// PrefixVisible reports whether any name that begins with prefix ("" on a
// single-backend vhost, "{key}-" on others) could be visible, or one of
// the aliases given: false only when none can, so a list need not ask the
// backend that publishes them.
func (a View) PrefixVisible(prefix string, aliases map[string]string) bool {
	switch {
	case a.policy == nil:
		return true
	case a.stepUp != nil && a.stepUp.prefixVisible(prefix):
		return true
	case a.rule == nil:
		return false
	}
	if a.rule.prefixVisible(prefix) {
		return true
	}
	for _, alias := range aliases {
		if a.Listed(alias) {
			return true
		}
	}
	return false
}

// prefixVisible reports whether the rule could show a name beginning with
// prefix.
func (r *accessRule) prefixVisible(prefix string) bool {
	allowed := false
	for _, g := range r.allow {
		if g.canPrefix(prefix) {
			allowed = true
			break
		}
	}
	covered := false
	for _, g := range r.deny {
		if g.coversPrefix(prefix) {
			covered = true
			break
		}
	}
	return allowed && !covered
}

// DenialReason names what the view refused a name with, for the audit
// trail: the rule that decided (access[i] of the vhost), or that none held.
func (a View) DenialReason(name string) string {
	if a.rule == nil {
		return "access: no rule of the virtual host holds for the caller"
	}
	for i := range a.policy.rules {
		if &a.policy.rules[i] == a.rule {
			return fmt.Sprintf("access: access[%d] does not allow %s", i, name)
		}
	}
	return "access: the deciding rule does not allow " + name
}
