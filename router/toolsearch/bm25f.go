package toolsearch

import (
	"math"
	"math/bits"
)

// BM25F (Robertson, Zaragoza and Taylor, "Simple BM25 extension to
// multiple weighted fields", 2004) scores a tool by the query's terms in
// each of its fields, each field weighted and length-normalised on its
// own, the weighted frequencies summed before saturation. A tool's name
// says what it does in two or three words and its description in thirty:
// one bag of words (plain BM25) lets a long description drown its name,
// and a parameter that mentions "issue" counts like a name that is
// "create_issue". The weights, normalisations and k1 below were chosen on
// half of the evaluation set (evaluation_test.go) and checked on the
// other half; docs/design/benchmarks-history.md gives the figures.

// field is one of a tool's fields.
type field uint8

const (
	fieldName field = iota
	fieldTitle
	fieldDescription // the search hint too
	fieldParams      // parameter names and descriptions
	fieldBackend
	numFields
)

// fieldWeight and fieldNorm are each field's weight, and how much its
// length normalises a term's frequency (BM25's b: 0 none, 1 fully).
var (
	fieldWeight = [numFields]float64{fieldName: 5, fieldTitle: 2, fieldDescription: 1, fieldParams: 0.1, fieldBackend: 1.5}
	fieldNorm   = [numFields]float64{fieldName: 0.5, fieldTitle: 0.5, fieldDescription: 0.75, fieldParams: 0.75, fieldBackend: 0}
)

// typicalLength is each field's mean length, in terms, over the 321
// tools of the evaluation set's 26 public servers: what BM25F's length
// normalisation compares a field with. The means of each backend's own
// list ranked clearly worse (a backend of two tools, or of wordy ones,
// skews them: recall@5 0.861 against 0.919), and the means of all the
// lists a search covers would need every weight worked out at every
// search; these rank as well as the latter and are fixed.
var typicalLength = [numFields]float64{fieldName: 2.6, fieldTitle: 1.6, fieldDescription: 44.5, fieldParams: 33.7, fieldBackend: 1}

// k1 is BM25's saturation: how quickly more occurrences stop adding. A
// little higher than the usual 1.2, so that a term in the name (weighted
// 5) still counts clearly more than the same term in the description.
const k1 = 2

// bm25f is the BM25F Ranker.
type bm25f struct{}

// NewBM25F is the built-in Ranker.
func NewBM25F() Ranker { return bm25f{} }

// segment is BM25F's index of one list of tools.
type segment struct {
	n int
	// postings: for each term, the tools that have it, with the term's
	// weighted, length-normalised frequency over their fields (BM25F's
	// pseudo-frequency, before saturation), worked out when the segment
	// is built so that a search only sums.
	postings map[string][]posting
}

// posting is one tool's occurrences of one term.
type posting struct {
	doc uint32
	tf  float32
}

func (s *segment) Len() int { return s.n }

// Index builds a segment: time and memory linear in the tools' text.
// Field lengths are normalised by typical lengths (typicalLength), not
// by the means of the lists searched together: a tool's weights are then
// the same whatever else a vhost holds, and are worked out once.
func (bm25f) Index(docs []Doc) Segment {
	s := &segment{n: len(docs), postings: map[string][]posting{}}
	st := stemmer{}
	var buf []string
	type counts struct {
		doc int
		tf  [numFields]uint16
	}
	perTerm := map[string][]counts{}
	lens := make([][numFields]float64, len(docs))
	for i, d := range docs {
		count := func(f field, text string) {
			buf = st.terms(text, buf[:0])
			for _, t := range buf {
				cs := perTerm[t]
				if len(cs) == 0 || cs[len(cs)-1].doc != i {
					cs = append(cs, counts{doc: i})
					perTerm[t] = cs
				}
				cs[len(cs)-1].tf[f]++
			}
			lens[i][f] += float64(len(buf))
		}
		count(fieldName, d.Name)
		count(fieldTitle, d.Title)
		count(fieldDescription, d.Description)
		count(fieldDescription, d.Hint)
		for _, p := range d.Params {
			count(fieldParams, p.Name)
			count(fieldParams, p.Description)
		}
		count(fieldBackend, d.Backend)
	}
	for t, cs := range perTerm {
		ps := make([]posting, len(cs))
		for j, c := range cs {
			tf := 0.0
			for f := range numFields {
				if c.tf[f] > 0 {
					tf += fieldWeight[f] * float64(c.tf[f]) / (1 - fieldNorm[f] + fieldNorm[f]*lens[c.doc][f]/typicalLength[f])
				}
			}
			ps[j] = posting{doc: uint32(c.doc), tf: float32(tf)}
		}
		s.postings[t] = ps
	}
	return s
}

// Rank scores the visible tools of parts that share a term with query.
// How many tools there are and how many have a term are counted over the
// visible tools of all the parts, so a search ranks what the caller may
// see as if nothing else existed.
func (bm25f) Rank(query string, parts []Part, limit int) []Hit {
	if limit <= 0 {
		return nil
	}
	segs := make([]*segment, len(parts))
	n := 0.0
	for i, p := range parts {
		if s, ok := p.Seg.(*segment); ok && s.n > 0 {
			segs[i] = s
			n += float64(visibleCount(s.n, p.Visible))
		}
	}
	if n == 0 {
		return nil
	}
	scores := make([][]float64, len(parts))
	for _, q := range queryTerms(query) {
		df := 0
		for i, s := range segs {
			if s == nil {
				continue
			}
			if parts[i].Visible == nil {
				df += len(s.postings[q.term])
				continue
			}
			for _, p := range s.postings[q.term] {
				if parts[i].Visible.Has(int(p.doc)) {
					df++
				}
			}
		}
		if df == 0 {
			continue
		}
		idf := q.weight * math.Log(1+(n-float64(df)+0.5)/(float64(df)+0.5))
		for i, s := range segs {
			if s == nil {
				continue
			}
			for _, p := range s.postings[q.term] {
				if parts[i].Visible != nil && !parts[i].Visible.Has(int(p.doc)) {
					continue
				}
				if scores[i] == nil {
					scores[i] = make([]float64, s.n)
				}
				tf := float64(p.tf)
				scores[i][p.doc] += idf * tf / (k1 + tf)
			}
		}
	}
	return best(scores, limit)
}

// visibleCount is the number of tools of n in visible (nil: all).
func visibleCount(n int, visible Bits) int {
	if visible == nil {
		return n
	}
	c := 0
	for _, w := range visible {
		c += bits.OnesCount64(w)
	}
	return c
}

// best is the limit highest scores, best first; ties by part, then by
// tool index, so a search answers the same every time. It keeps the best
// so far in order (limit is small, 50 at most), so most tools cost one
// comparison with the worst kept.
func best(scores [][]float64, limit int) []Hit {
	hits := make([]Hit, 0, limit)
	for p, s := range scores {
		for d, v := range s {
			if v <= 0 || len(hits) == limit && v <= hits[limit-1].Score {
				continue // ties: the earlier tool stays
			}
			h := Hit{Part: p, Doc: d, Score: v}
			i := len(hits)
			if i < limit {
				hits = append(hits, h)
			} else {
				i--
			}
			for ; i > 0 && hits[i-1].Score < v; i-- {
				hits[i] = hits[i-1]
			}
			hits[i] = h
		}
	}
	return hits
}
