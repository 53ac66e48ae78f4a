package policy

import (
	"errors"
	"strings"
	"unicode"
)

// nameGlob is one allow or deny pattern of an access rule, matched against
// a published name or URI.
//
// Only '*' is special: it stands for any run of characters, '/' included,
// possibly empty. Every other character means itself. The usual glob
// libraries give '?', '[', '{' and '\' meanings too, and path-style ones
// stop '*' at '/'; but the identifiers matched here are tool names and
// URIs, where '?' starts a query, '{' opens a URI template variable
// ("gateway-two-file:///{path}") and '/' is everywhere, so any of those
// meanings would make a plainly written URI pattern match something other
// than what it says. With '*' alone a pattern is also simple enough to
// reason about: canPrefix and coversPrefix answer whether a backend can
// show anything at all to a caller, which lets lists skip a backend that
// is hidden whole (access.go).
type nameGlob struct {
	src string
	// parts are src split at its '*' runs: parts[0] must start the name,
	// the last must end it, the ones between must appear in order. One
	// part means no '*': the name must equal it.
	parts []string
}

// compileGlob checks and compiles one pattern.
func compileGlob(src string) (nameGlob, error) {
	if src == "" {
		return nameGlob{}, errors.New("empty pattern (use \"*\" for every name)")
	}
	for _, r := range src {
		if unicode.IsControl(r) {
			return nameGlob{}, errors.New("pattern holds a control character")
		}
	}
	collapsed := src
	for strings.Contains(collapsed, "**") {
		collapsed = strings.ReplaceAll(collapsed, "**", "*") // "a**b" is "a*b"
	}
	parts := strings.Split(collapsed, "*")
	return nameGlob{src: src, parts: parts}, nil
}

// match reports whether the whole of s matches the pattern. Middle parts
// are found leftmost first, which is enough with '*' as the only
// wildcard: taking the earliest occurrence never rules out a later match.
func (g nameGlob) match(s string) bool {
	if len(g.parts) == 1 {
		return s == g.parts[0]
	}
	head, tail := g.parts[0], g.parts[len(g.parts)-1]
	if len(s) < len(head)+len(tail) || !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) {
		return false
	}
	s = s[len(head) : len(s)-len(tail)]
	for _, p := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// canPrefix reports whether the pattern matches some name that starts with
// p. It is exact: with a '*' after the head, anything after p can be
// absorbed by it and the rest of the pattern written out literally.
func (g nameGlob) canPrefix(p string) bool {
	head := g.parts[0]
	if len(g.parts) == 1 {
		return strings.HasPrefix(head, p)
	}
	return strings.HasPrefix(p, head) || strings.HasPrefix(head, p)
}

// coversPrefix reports whether the pattern surely matches every name that
// starts with p: it is a head that p starts with, then '*' and nothing
// else. A pattern that covers p some other way ("k*x*" covers "kx-") is
// not recognised, which only ever makes a backend look visible: its items
// are then fetched and filtered one by one.
func (g nameGlob) coversPrefix(p string) bool {
	return len(g.parts) == 2 && g.parts[1] == "" && strings.HasPrefix(p, g.parts[0])
}
