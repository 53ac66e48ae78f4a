package plugins

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
)

// pattern is one compiled regular expression of a plugin.
type pattern struct {
	src string
	re  *regexp.Regexp
}

// compilePatterns compiles each source, reporting each failure by index.
func compilePatterns(srcs []string, fail func(j int, err error)) []pattern {
	out := make([]pattern, 0, len(srcs))
	for j, src := range srcs {
		if src == "" {
			fail(j, errEmptyPattern)
			continue
		}
		re, err := regexp.Compile(src)
		if err != nil {
			fail(j, err)
			continue
		}
		if re.MatchString("") {
			// It would match every string: deny everything, or redact
			// between every character.
			fail(j, errMatchesEmpty)
			continue
		}
		out = append(out, pattern{src: src, re: re})
	}
	return out
}

type patternError string

func (e patternError) Error() string { return string(e) }

const (
	errEmptyPattern = patternError("empty pattern: it would match everything")
	errMatchesEmpty = patternError("the pattern matches the empty string, so it would match every string (use + rather than *)")
)

// matcher decides quickly whether any of a set of expressions matches
// anywhere in a JSON document, before the document is walked string by
// string. When the document has no escapes, every string value's text is
// a substring of it, and an expression that cannot anchor to a string's
// start or end (no ^, $, \A, \z) matching inside one string also matches
// the document: so no match in the document means no match in any string.
// ('\b' holds the same at a string's ends as next to its quotes.) The
// prefilter is one regexp pass over the bytes, with no decoding.
type matcher struct {
	any *regexp.Regexp // every expression, as alternatives
	// anchored: some expression anchors, so the prefilter cannot be used.
	anchored bool
}

func newMatcher(res []*regexp.Regexp) matcher {
	if len(res) == 0 {
		return matcher{}
	}
	alts := make([]string, len(res))
	m := matcher{}
	for i, re := range res {
		alts[i] = "(?:" + re.String() + ")"
		if anchors(re.String()) {
			m.anchored = true
		}
	}
	m.any = regexp.MustCompile(strings.Join(alts, "|"))
	return m
}

// mayMatch reports whether some string of doc may match; false is sure.
func (m matcher) mayMatch(doc []byte) bool {
	if m.any == nil {
		return false
	}
	if m.anchored || bytes.IndexByte(doc, '\\') >= 0 {
		return true
	}
	return m.any.Match(doc)
}

// anchors reports whether an expression uses a text or line anchor.
func anchors(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(*syntax.Regexp) bool
	walk = func(r *syntax.Regexp) bool {
		switch r.Op {
		case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
			return true
		}
		for _, s := range r.Sub {
			if walk(s) {
				return true
			}
		}
		return false
	}
	return walk(re)
}
