package policy

import (
	"fmt"
	"strconv"
)

// A list of published names that some feature singles out (tool_search's
// always: the tools a search vhost still lists) is written with the
// patterns access rules use, so that one pattern means the same thing
// everywhere in a vhost's config.

// Names is a compiled list of name patterns ('*' any run of characters,
// as in access rules). The zero value and nil match nothing. It is
// immutable and safe for concurrent use.
type Names struct {
	src   []string
	globs []nameGlob
}

// NamesError is one bad pattern of a list: its index and what is wrong.
type NamesError struct {
	Index int
	Msg   string
}

func (e *NamesError) Error() string { return "[" + strconv.Itoa(e.Index) + "]: " + e.Msg }

// CompileNames compiles patterns; the error is the first bad one's
// (*NamesError).
func CompileNames(patterns []string) (*Names, error) {
	n := &Names{src: append([]string(nil), patterns...)}
	for i, src := range patterns {
		g, err := compileGlob(src)
		if err != nil {
			return nil, &NamesError{Index: i, Msg: fmt.Sprint(err)}
		}
		n.globs = append(n.globs, g)
	}
	return n, nil
}

// Match reports whether name matches one of the patterns.
func (n *Names) Match(name string) bool {
	return n != nil && anyMatch(n.globs, name)
}

// Patterns are the patterns as written.
func (n *Names) Patterns() []string {
	if n == nil {
		return nil
	}
	return append([]string(nil), n.src...)
}
