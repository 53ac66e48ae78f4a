package openapi

// Which operations become tools, and under which names. A name comes
// from the operationId, made a valid MCP tool name (letters, digits, '_',
// '-', '.'; at most 128 bytes): GitHub's "repos/get" is "repos_get". An
// operation without an id is named by its method and path
// ("get_pets_petId"). Names that collide get a suffix derived from their
// own method and path, never from their position, so a name does not
// change when another operation is added or removed.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// maxToolName is MCP's bound on a tool name.
const maxToolName = 128

var invalidNameRun = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// baseName is an operation's tool name before collisions are settled.
func baseName(operationID, method, path string) string {
	src := operationID
	if src == "" {
		src = strings.ToLower(method) + "_" + strings.Trim(strings.NewReplacer("{", "", "}", "").Replace(path), "/")
	}
	n := strings.Trim(invalidNameRun.ReplaceAllString(src, "_"), "_")
	if n == "" {
		n = strings.ToLower(method)
	}
	if len(n) > maxToolName {
		n = n[:maxToolName-8] + "_" + shortHash(method+" "+path)
	}
	return n
}

// shortHash is 7 hex digits of an operation's method and path.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:7]
}

// uniqueNames settles collisions: every operation sharing a name gets
// the suffix of its method and path.
func uniqueNames(ops []*operation) {
	count := map[string]int{}
	for _, op := range ops {
		count[op.name]++
	}
	for _, op := range ops {
		if count[op.name] < 2 {
			continue
		}
		suffix := "_" + shortHash(op.method+" "+op.path)
		base := op.name
		if len(base)+len(suffix) > maxToolName {
			base = base[:maxToolName-len(suffix)]
		}
		op.name = base + suffix
	}
}

// selector is the `operations` globs: an operationId glob, or a
// "METHOD /path" glob when it starts with an HTTP method and a space.
// '*' stands for any run of characters ('/' included), as in access
// rules; nothing else is special.
type selector struct {
	globs []string
	used  []bool
}

func newSelector(globs []string) *selector {
	return &selector{globs: globs, used: make([]bool, len(globs))}
}

// selects reports whether an operation is selected, noting which globs
// matched (every glob must match something).
func (s *selector) selects(op *operation) bool {
	if len(s.globs) == 0 {
		return true
	}
	hit := false
	for i, g := range s.globs {
		var ok bool
		if method, p, isPath := methodGlob(g); isPath {
			ok = (method == "*" || method == op.method) && globMatch(p, op.path)
		} else {
			ok = op.id != "" && globMatch(g, op.id)
		}
		if ok {
			s.used[i], hit = true, true
		}
	}
	return hit
}

// unused lists the globs that matched no operation.
func (s *selector) unused() []string {
	var out []string
	for i, g := range s.globs {
		if !s.used[i] {
			out = append(out, fmt.Sprintf("%q", g))
		}
	}
	return out
}

// methodGlob splits "GET /pets/*" into its method and path glob.
func methodGlob(g string) (method, path string, ok bool) {
	m, p, found := strings.Cut(strings.TrimSpace(g), " ")
	if !found {
		return "", "", false
	}
	m = strings.ToUpper(m)
	switch m {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions,
		http.MethodHead, http.MethodPatch, http.MethodTrace, "*":
		return m, strings.TrimSpace(p), true
	}
	return "", "", false
}

// globMatch matches s against a pattern where '*' stands for any run.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
