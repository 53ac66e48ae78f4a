package plugins

import (
	"context"
	"encoding/json"
	"regexp"

	"github.com/mcpgw/gateway/router"
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
}

func (r *redact) init() {
	res := make([]*regexp.Regexp, len(r.detectors))
	for i, d := range r.detectors {
		res[i] = d.re
	}
	r.m = newMatcher(res)
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
			{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`)},
			{"aws_secret_key", regexp.MustCompile(`(?i)\baws_?secret_?access_?key\b["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}`)},
			{"github_token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
			{"slack_token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+`)},
			{"private_key", regexp.MustCompile(`-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----`)},
			{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)},
		}, true
	case "email":
		return []detector{
			{"email", regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}`)},
		}, true
	}
	return nil, false
}

func (r *redact) Pre(context.Context, *router.HookCall) error { return nil }

// Post redacts the result.
func (r *redact) Post(_ context.Context, c *router.HookCall, result json.RawMessage) (json.RawMessage, error) {
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
func (r *redact) Progress(_ context.Context, c *router.HookCall, params json.RawMessage) (json.RawMessage, error) {
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
	if !r.m.mayMatch(doc) {
		return doc, false
	}
	changed := false
	out := eachString(doc, func(s []byte) ([]byte, bool) {
		var cur []byte
		for _, d := range r.detectors {
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
