package credentials

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A claim template is an add_headers value that names claims of the
// caller's verified token: "${claims.sub}", "tenant-${claims.org.id}",
// "${claims.groups[0]}", "${claims.groups[*]}" (every element, joined with
// ","), or `${claims["https://example.com/roles"][*]}` for claim names that
// are not plain identifiers. It is parsed once, when config is loaded, and
// expanded for every backend request from the claims of the request's own
// token, so two callers of one backend send different values.
//
// The literal text around the claims is the config's own (environment
// variables are expanded in it at load time); only the claims come from
// the caller, and a claim value that could end the header line (a control
// character) is refused, never sent.

const (
	// maxTemplateRefs bounds the claim references of one value.
	maxTemplateRefs = 16
	// maxExpandedBytes bounds one expanded value: a token with a huge
	// claim must not make every backend request carry it.
	maxExpandedBytes = 8 << 10
)

// Template is a parsed claim template: plain data, compared with
// reflect.DeepEqual when config is reloaded.
type Template struct {
	parts []part
}

// part is literal text or one claim reference.
type part struct {
	literal string
	ref     *claimRef
}

// claimRef is one ${claims...} reference: a path of object keys and array
// steps into the claims.
type claimRef struct {
	text  string // as written, for messages: claims.org.id
	steps []step
}

// step is one move into a claim value: an object key, an array index, or
// (last only) every element of an array.
type step struct {
	key   string
	index int // -1: not an index step
	all   bool
}

// HasClaims reports whether t names any claim (otherwise it is a constant).
func (t *Template) HasClaims() bool {
	for _, p := range t.parts {
		if p.ref != nil {
			return true
		}
	}
	return false
}

// Claims lists the claim references of t as written ("claims.sub").
func (t *Template) Claims() []string {
	var out []string
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, p.ref.text)
		}
	}
	return out
}

// ParseTemplate parses a header value. Each "${claims" starts a claim
// reference; every other piece of text is literal and is passed through
// literal (config expands ${ENV} variables there), whose error is
// returned as it is. A syntax error says where in the value it is, never
// the value itself (it may hold a secret from the environment).
func ParseTemplate(s string, literal func(string) (string, error)) (*Template, error) {
	t := &Template{}
	refs := 0
	for s != "" {
		i := strings.Index(s, "${claims")
		if i < 0 {
			if err := t.addLiteral(s, literal); err != nil {
				return nil, err
			}
			break
		}
		if i > 0 {
			if err := t.addLiteral(s[:i], literal); err != nil {
				return nil, err
			}
		}
		rest := s[i+2:] // after "${"
		end, ref, err := parseRef(rest)
		if err != nil {
			return nil, fmt.Errorf("claim template %d: %w", refs+1, err)
		}
		if refs++; refs > maxTemplateRefs {
			return nil, fmt.Errorf("more than %d claim templates in one value", maxTemplateRefs)
		}
		t.parts = append(t.parts, part{ref: ref})
		s = rest[end+1:]
	}
	return t, nil
}

func (t *Template) addLiteral(s string, literal func(string) (string, error)) error {
	if literal != nil {
		var err error
		if s, err = literal(s); err != nil {
			return err
		}
	}
	if s != "" {
		t.parts = append(t.parts, part{literal: s})
	}
	return nil
}

// parseRef parses "claims<steps>}" and returns the index of the closing
// brace in s.
func parseRef(s string) (int, *claimRef, error) {
	const head = "claims"
	i := len(head)
	ref := &claimRef{}
	for {
		if i >= len(s) {
			return 0, nil, errors.New("unterminated ${claims...}: a '}' is missing")
		}
		switch s[i] {
		case '}':
			if len(ref.steps) == 0 {
				return 0, nil, errors.New("${claims} names no claim: write ${claims.NAME}")
			}
			ref.text = s[:i]
			return i, ref, nil
		case '.':
			j := i + 1
			for j < len(s) && identByte(s[j]) {
				j++
			}
			if j == i+1 {
				return 0, nil, fmt.Errorf("a claim name is expected after '.' at offset %d (use [\"...\"] for other names)", i+1)
			}
			ref.steps = append(ref.steps, step{key: s[i+1 : j], index: -1})
			i = j
		case '[':
			st, n, err := parseBracket(s[i:])
			if err != nil {
				return 0, nil, fmt.Errorf("at offset %d: %w", i, err)
			}
			if len(ref.steps) == 0 && st.key == "" {
				return 0, nil, errors.New("the claims themselves are not an array: name a claim first")
			}
			ref.steps = append(ref.steps, st)
			i += n
		default:
			return 0, nil, fmt.Errorf("unexpected character at offset %d (want '.', '[' or '}')", i)
		}
		if n := len(ref.steps); n > 1 && ref.steps[n-2].all {
			return 0, nil, errors.New("[*] must be the last step")
		}
	}
}

// parseBracket parses [N], [*] or ["key"] at the start of s and returns
// the step and its length.
func parseBracket(s string) (step, int, error) {
	if len(s) < 2 {
		return step{}, 0, errors.New("unterminated '['")
	}
	end := strings.IndexByte(s, ']')
	if s[1] == '"' {
		// A quoted key: find the closing quote, then ']'.
		q := strings.IndexByte(s[2:], '"')
		if q < 0 || len(s) < q+4 || s[q+3] != ']' {
			return step{}, 0, errors.New(`a quoted claim name needs ["name"]`)
		}
		key := s[2 : q+2]
		if key == "" || strings.ContainsAny(key, "\\{}") {
			return step{}, 0, errors.New(`a quoted claim name must be non-empty and hold no '\', '{' or '}'`)
		}
		return step{key: key, index: -1}, q + 4, nil
	}
	if end < 0 {
		return step{}, 0, errors.New("unterminated '['")
	}
	inner := s[1:end]
	if inner == "*" {
		return step{index: -1, all: true}, end + 1, nil
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 || n > 1<<16 || inner != strconv.Itoa(n) {
		return step{}, 0, errors.New("an array index is a number from 0, [*] or a quoted name")
	}
	return step{index: n}, end + 1, nil
}

func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ClaimError is a claim template the caller's token cannot fill: the
// claim is missing, or its value is no scalar, or would not be a safe
// header value. It names the claim, never its value.
type ClaimError struct {
	Claim  string // as written: claims.org.id
	Reason string
}

func (e *ClaimError) Error() string { return "claim " + e.Claim + " " + e.Reason }

// Expand fills t from claims (a verified token's claims as JSON values).
func (t *Template) Expand(claims map[string]any) (string, error) {
	if len(t.parts) == 1 && t.parts[0].ref == nil {
		return t.parts[0].literal, nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.literal)
			continue
		}
		if err := p.ref.write(&b, claims); err != nil {
			return "", err
		}
		if b.Len() > maxExpandedBytes {
			return "", &ClaimError{Claim: p.ref.text, Reason: fmt.Sprintf("makes the header longer than %d bytes", maxExpandedBytes)}
		}
	}
	return b.String(), nil
}

func (r *claimRef) write(b *strings.Builder, claims map[string]any) error {
	var cur any = claims
	if claims == nil {
		return &ClaimError{Claim: r.text, Reason: "is missing: the request carries no token claims"}
	}
	for i, st := range r.steps {
		switch {
		case st.all:
			arr, ok := cur.([]any)
			if !ok {
				return &ClaimError{Claim: r.text, Reason: "is not an array ([*] needs one)"}
			}
			if len(arr) == 0 {
				return &ClaimError{Claim: r.text, Reason: "is missing: the array is empty"}
			}
			for j, el := range arr {
				if j > 0 {
					b.WriteByte(',')
				}
				if err := writeScalar(b, r.text, el); err != nil {
					return err
				}
			}
			return nil
		case st.index >= 0:
			arr, ok := cur.([]any)
			if !ok {
				return &ClaimError{Claim: r.text, Reason: "is not an array at step " + strconv.Itoa(i+1)}
			}
			if st.index >= len(arr) {
				return &ClaimError{Claim: r.text, Reason: "is missing: the array has " + strconv.Itoa(len(arr)) + " elements"}
			}
			cur = arr[st.index]
		default:
			obj, ok := cur.(map[string]any)
			if !ok {
				return &ClaimError{Claim: r.text, Reason: "is missing (a value on its path is not an object)"}
			}
			v, ok := obj[st.key]
			if !ok {
				return &ClaimError{Claim: r.text, Reason: "is missing from the caller's token"}
			}
			cur = v
		}
	}
	return writeScalar(b, r.text, cur)
}

// writeScalar writes a string, number or boolean claim; anything else,
// and any value holding a control character (CR and LF would split the
// header line), is refused.
func writeScalar(b *strings.Builder, name string, v any) error {
	switch x := v.(type) {
	case string:
		if !headerSafe(x) {
			return &ClaimError{Claim: name, Reason: "holds a control character, which a header value cannot carry"}
		}
		b.WriteString(x)
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		return &ClaimError{Claim: name, Reason: "is null"}
	case map[string]any:
		return &ClaimError{Claim: name, Reason: "is an object, not a value for a header"}
	case []any:
		return &ClaimError{Claim: name, Reason: "is an array: pick an element ([0]) or join them ([*])"}
	default:
		// json.Number and integer types, when claims come from elsewhere.
		s := fmt.Sprint(x)
		if !headerSafe(s) {
			return &ClaimError{Claim: name, Reason: "holds a control character, which a header value cannot carry"}
		}
		b.WriteString(s)
	}
	return nil
}

// headerSafe rejects control characters other than horizontal tab
// (RFC 9110 §5.5: CR, LF and NUL are never valid in a field value).
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
