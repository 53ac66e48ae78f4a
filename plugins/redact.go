package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"

	"github.com/mcpgw/gateway/router/hook"
)

// redact replaces what its detectors find in a result's string values,
// and in the message of each progress notification of a tools/call, with
// "[REDACTED:<detector>]". It never refuses.
type redact struct {
	rule
	detectors []detector
	m         matcher
}

// detector is one thing redact finds: a built-in detector or a pattern.
type detector struct {
	name string
	re   *regexp.Regexp
	// hints: a built-in detector cannot match a string that holds none of
	// these (ASCII, matched ignoring case), so a document without any is
	// not searched at all; nil for patterns.
	hints []string
}

func (r *redact) init() {
	var res []*regexp.Regexp
	for _, d := range r.detectors {
		if d.hints == nil {
			res = append(res, d.re)
		}
	}
	r.m = newMatcher(res)
}

// active returns the detectors that may find something in doc: the
// patterns when the matcher cannot rule them out, and the built-in ones
// whose hints doc holds. A backslash in doc means escapes could hide a
// hint: then every detector is active.
func (r *redact) active(doc []byte) []detector {
	escaped := bytes.IndexByte(doc, '\\') >= 0
	patterns := r.m.mayMatch(doc)
	var out []detector
	for _, d := range r.detectors {
		switch {
		case d.hints == nil && !patterns:
			continue
		case d.hints != nil && !escaped && !containsAnyFold(doc, d.hints):
			continue
		}
		out = append(out, d)
	}
	return out
}

// builtinDetectors are redact's built-in detectors of a set ("secrets",
// "email"), compiled afresh for each plugin. They look for the shape of a
// credential, so they are precise for the kinds with a fixed prefix (AWS
// key ids, GitHub and Slack tokens, PEM private keys, JWTs) and say
// nothing of free-form secrets: add patterns for those.
func builtinDetectors(set string) ([]detector, bool) {
	switch set {
	case "secrets":
		return []detector{
			{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), []string{"akia", "asia", "abia", "acca"}},
			{"aws_secret_key", regexp.MustCompile(`(?i)\baws_?secret_?access_?key\b["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}`), []string{"secret"}},
			{"github_token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`), []string{"gh", "github_pat_"}},
			{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+`), []string{"xox", "hooks.slack.com"}},
			{"private_key", regexp.MustCompile(`-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----`), []string{"private key-----"}},
			{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), []string{"eyj"}},
		}, true
	case "email":
		return []detector{
			{"email", regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`), []string{"@"}},
		}, true
	}
	return nil, false
}

// containsAnyFold reports whether doc holds one of the lower-case ASCII
// hints, ignoring ASCII case, with no allocation.
func containsAnyFold(doc []byte, hints []string) bool {
	for _, h := range hints {
		if hasFold(doc, h) {
			return true
		}
	}
	return false
}

// hasFold reports whether doc holds h ignoring ASCII case. It looks for
// h's first byte in either case from where it left off, so it is linear
// in len(doc) whatever doc holds.
func hasFold(doc []byte, h string) bool {
	if h == "" {
		return true
	}
	lower, upper := h[0], h[0]
	if 'a' <= lower && lower <= 'z' {
		upper = lower - 'a' + 'A'
	}
	next := func(c byte, from int) int {
		if from > len(doc) {
			return -1
		}
		if k := bytes.IndexByte(doc[from:], c); k >= 0 {
			return from + k
		}
		return -1
	}
	nl, nu := next(lower, 0), -1
	if upper != lower {
		nu = next(upper, 0)
	}
	for {
		i := nl
		if i < 0 || (nu >= 0 && nu < i) {
			i = nu
		}
		if i < 0 || len(doc)-i < len(h) {
			return false
		}
		if bytes.EqualFold(doc[i:i+len(h)], []byte(h)) {
			return true
		}
		if i == nl {
			nl = next(lower, i+1)
		}
		if i == nu {
			nu = next(upper, i+1)
		}
	}
}

func (r *redact) Pre(context.Context, *hook.Call) error { return nil }

// Post redacts the result.
func (r *redact) Post(_ context.Context, c *hook.Call, result json.RawMessage) (json.RawMessage, error) {
	out, changed := r.redactJSON(result)
	if changed {
		c.Decided(TypeRedact, DecisionRedact)
	} else {
		c.Decided(TypeRedact, DecisionAllow)
	}
	return out, nil
}

// Progress redacts a progress notification's message (the only free text
// it carries; the token and numbers are left alone).
func (r *redact) Progress(_ context.Context, c *hook.Call, params json.RawMessage) (json.RawMessage, error) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params, nil
	}
	msg, ok := p["message"]
	if !ok {
		return params, nil
	}
	red, changed := r.redactJSON(msg)
	if !changed {
		return params, nil
	}
	c.Decided(TypeRedact, DecisionRedact)
	p["message"] = red
	out, err := json.Marshal(p)
	if err != nil {
		return params, nil
	}
	return out, nil
}

// redactJSON rewrites every string value of doc in which a detector finds
// something.
func (r *redact) redactJSON(doc []byte) ([]byte, bool) {
	active := r.active(doc)
	if len(active) == 0 {
		return doc, false
	}
	changed := false
	out := eachString(doc, func(s []byte) ([]byte, bool) {
		var cur []byte
		for _, d := range active {
			src := s
			if cur != nil {
				src = cur
			}
			if !d.re.Match(src) {
				continue
			}
			cur = d.re.ReplaceAllLiteral(src, []byte("[REDACTED:"+d.name+"]"))
		}
		if cur == nil {
			return nil, false
		}
		changed = true
		return cur, true
	})
	return out, changed
}
