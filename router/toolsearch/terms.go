package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// A tool's name is an identifier (get_file_contents, browser-navigate,
// listIssues, API-post-search) and a query is a sentence ("show me the
// open pull requests"): both become the same terms here, so that the
// words of one meet the words of the other. Words are split at every
// character that is not a letter or digit and at camelCase boundaries,
// lowercased, English stop words dropped, and stemmed (Snowball English,
// kljensen/snowball: a maintained implementation of the standard
// algorithm), so "repositories", "repository" and "repos" meet, and
// "creating" meets "create".

// maxQueryTerms bounds the terms one query is searched for: past it the
// rest of a (pasted, overlong) query is ignored.
const maxQueryTerms = 32

// words appends the lowercase words of s to out: runs of letters and
// digits, split where camelCase changes case (listIssues: list, issues;
// HTMLPage: html, page).
func words(s string, out []string) []string {
	start := -1
	var prev rune
	prevUpper := false
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i, r := range s {
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !alnum {
			flush(i)
			prev, prevUpper = r, false
			continue
		}
		upper := unicode.IsUpper(r)
		if start >= 0 && upper {
			switch {
			case unicode.IsLower(prev) || unicode.IsDigit(prev):
				flush(i) // listIssues: a capital after a small letter
			case prevUpper && nextIsLower(s, i+utf8.RuneLen(r)):
				flush(i) // HTMLPage: the last capital of a run starts a word
			}
		}
		if start < 0 {
			start = i
		}
		prev, prevUpper = r, upper
	}
	flush(len(s))
	return out
}

// nextIsLower reports whether the rune at s[i:] is a lowercase letter.
func nextIsLower(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLower(r)
}

// stemmer turns words into terms, remembering the stems it has made:
// one list's words repeat a great deal (every GitHub tool says
// "repository"), so an index is built with one stemming per distinct
// word.
type stemmer map[string]string

// term is a word's term: "" for a stop word or a lone letter.
func (s stemmer) term(w string) string {
	if t, ok := s[w]; ok {
		return t
	}
	t := ""
	if (len(w) > 1 || isDigit(w)) && !english.IsStopWord(w) {
		t = english.Stem(w, true)
	}
	if s != nil {
		s[w] = t
	}
	return t
}

func isDigit(w string) bool { return w != "" && w[0] >= '0' && w[0] <= '9' }

// terms appends the terms of s to out.
func (s stemmer) terms(text string, out []string) []string {
	var buf [16]string
	for _, w := range words(text, buf[:0]) {
		if t := s.term(w); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// queryTerm is one term a query is searched for, with its weight: 1 for
// the query's own words, less for the words a synonym adds.
type queryTerm struct {
	term   string
	weight float64
}

// synonymWeight is the weight of a term a synonym adds to a query.
const synonymWeight = 0.2

// queryTerms are the terms of a query: its own, then their synonyms.
func queryTerms(query string) []queryTerm {
	own := stemmer(nil).terms(query, nil)
	if len(own) > maxQueryTerms {
		own = own[:maxQueryTerms]
	}
	out := make([]queryTerm, 0, len(own)*2)
	add := func(t string, w float64) {
		for i := range out {
			if out[i].term == t {
				if w == 1 {
					out[i].weight += w // a word said twice counts twice
				}
				return
			}
		}
		out = append(out, queryTerm{t, w})
	}
	for _, t := range own {
		add(t, 1)
	}
	for _, t := range own {
		for _, syn := range synonyms[t] {
			add(syn, synonymWeight)
		}
	}
	return out
}
