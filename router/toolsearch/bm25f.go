package toolsearch

import (
	"math"
	"math/bits"
	"slices"
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
// other half; BENCHMARKS.md gives the figures.

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
	n     int
	lens  [][numFields]uint16 // each tool's field lengths, in terms
	total [numFields]float64  // field lengths summed over the tools
	// postings: for each term, the tools that have it and how often in
	// each field, by tool index.
	postings map[string][]posting
}

// posting is one tool's occurrences of one term.
type posting struct {
	doc uint32
	tf  [numFields]uint8 // saturates at 255
}

func (s *segment) Len() int { return s.n }

// Index builds a segment: time and memory linear in the tools' text.
func (bm25f) Index(docs []Doc) Segment {
	s := &segment{n: len(docs), lens: make([][numFields]uint16, len(docs)), postings: map[string][]posting{}}
	st := stemmer{}
	var buf []string
	counts := map[string]*[numFields]uint8{}
	for i, d := range docs {
		clear(counts)
		count := func(f field, text string) {
			buf = st.terms(text, buf[:0])
			for _, t := range buf {
				c := counts[t]
				if c == nil {
					c = new([numFields]uint8)
					counts[t] = c
				}
				if c[f] < math.MaxUint8 {
					c[f]++
				}
			}
			s.lens[i][f] = uint16(min(int(s.lens[i][f])+len(buf), math.MaxUint16))
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
		for f := range numFields {
			s.total[f] += float64(s.lens[i][f])
		}
		for t, c := range counts {
			s.postings[t] = append(s.postings[t], posting{doc: uint32(i), tf: *c})
		}
	}
	return s
}

// Rank scores the visible tools of parts that share a term with query.
// The statistics (how many tools, how many have a term, how long each
// field is on average) are those of the visible tools of all the parts,
// so a search ranks what the caller may see as if nothing else existed.
func (bm25f) Rank(query string, parts []Part, limit int) []Hit {
	if limit <= 0 {
		return nil
	}
	segs := make([]*segment, len(parts))
	n := 0.0
	var total [numFields]float64
	for i, p := range parts {
		s, ok := p.Seg.(*segment)
		if !ok || s.n == 0 {
			continue
		}
		segs[i] = s
		n += float64(visibleCount(s.n, p.Visible))
		for f := range numFields {
			total[f] += s.total[f] // lengths: of every tool (a mean, not a count)
		}
	}
	all := 0
	for _, s := range segs {
		if s != nil {
			all += s.n
		}
	}
	if n == 0 || all == 0 {
		return nil
	}
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(total[f]/float64(all), 1)
	}
	scores := make([][]float64, len(parts))
	for _, q := range queryTerms(query) {
		df := 0
		for i, s := range segs {
			if s == nil {
				continue
			}
			for _, p := range s.postings[q.term] {
				if parts[i].Visible == nil || parts[i].Visible.Has(int(p.doc)) {
					df++
				}
			}
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		for i, s := range segs {
			if s == nil {
				continue
			}
			for _, p := range s.postings[q.term] {
				if parts[i].Visible != nil && !parts[i].Visible.Has(int(p.doc)) {
					continue
				}
				tf := 0.0
				for f := range numFields {
					if p.tf[f] == 0 {
						continue
					}
					norm := 1 - fieldNorm[f] + fieldNorm[f]*float64(s.lens[p.doc][f])/avg[f]
					tf += fieldWeight[f] * float64(p.tf[f]) / norm
				}
				if scores[i] == nil {
					scores[i] = make([]float64, s.n)
				}
				scores[i][p.doc] += q.weight * idf * tf / (k1 + tf)
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
// tool index, so a search answers the same every time.
func best(scores [][]float64, limit int) []Hit {
	var hits []Hit
	for p, s := range scores {
		for d, v := range s {
			if v > 0 {
				hits = append(hits, Hit{Part: p, Doc: d, Score: v})
			}
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.Part != b.Part:
			return a.Part - b.Part
		}
		return a.Doc - b.Doc
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
