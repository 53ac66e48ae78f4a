package handler

import (
	"mime"
	"strconv"
	"strings"
)

// accepts reports which of the transport's two response types an Accept
// header allows, by the rules of RFC 9110 §12.5.1: each type takes the
// quality of the most specific media range that matches it
// (application/json, then application/*, then */*), and quality 0 means
// "not acceptable". So "application/json;q=0" refuses JSON, and
// "*/*, application/json;q=0" accepts anything but JSON. A missing header
// allows both (curl sends */*; strict clients send both types); ranges
// that do not parse, or carry a malformed q, are ignored.
func accepts(values []string) (jsonOK, sseOK bool) {
	if len(values) == 0 {
		return true, true
	}
	jsonQ := acceptance{specificity: -1}
	sse := acceptance{specificity: -1}
	eachMediaRange(values, func(typ, sub string, q float64) {
		jsonQ.consider(typ, sub, "application", "json", q)
		sse.consider(typ, sub, "text", "event-stream", q)
	})
	return jsonQ.ok(), sse.ok()
}

// eachMediaRange calls fn with each media range of Accept header values
// and its quality; ranges that do not parse, or carry a malformed q, are
// skipped.
func eachMediaRange(values []string, fn func(typ, sub string, q float64)) {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			mt, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil || q < 0 || q > 1 {
					continue
				}
			}
			typ, sub, _ := strings.Cut(mt, "/")
			fn(typ, sub, q)
		}
	}
}

// acceptance is the most specific range seen so far for one media type.
type acceptance struct {
	specificity int // 2: type/subtype, 1: type/*, 0: */*; -1: none matched
	q           float64
}

// consider weighs the range typ/sub with quality q for the type want/wantSub.
func (a *acceptance) consider(typ, sub, want, wantSub string, q float64) {
	spec := -1
	switch {
	case typ == want && sub == wantSub:
		spec = 2
	case typ == want && sub == "*":
		spec = 1
	case typ == "*" && sub == "*":
		spec = 0
	}
	switch {
	case spec < 0 || spec < a.specificity:
	case spec > a.specificity:
		a.specificity, a.q = spec, q
	default: // the same range twice: the better quality wins
		a.q = max(a.q, q)
	}
}

func (a acceptance) ok() bool { return a.specificity >= 0 && a.q > 0 }
