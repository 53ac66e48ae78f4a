package plugins

import (
	"encoding/json"
)

// eachString calls fn with the decoded text of every string value in the
// JSON document raw (object keys are skipped: they are structure, not
// content). When fn returns a replacement (ok), the value is rewritten;
// the result is raw itself when nothing was. raw must be valid JSON (it is
// checked where it enters the gateway); a malformed tail is left as it is.
//
// It scans bytes instead of decoding the document into a tree: strings
// without escapes are handed to fn as slices of raw, so a document with
// nothing to change costs no allocation.
func eachString(raw []byte, fn func(s []byte) (replacement []byte, ok bool)) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(raw); {
		if raw[i] != '"' {
			i++
			continue
		}
		start := i
		escaped := false
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(raw) {
			break // unterminated: malformed, left alone
		}
		i++
		end := i
		j := end
		for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
			j++
		}
		if j < len(raw) && raw[j] == ':' {
			continue // an object key
		}
		text := raw[start+1 : end-1]
		if escaped {
			var s string
			if json.Unmarshal(raw[start:end], &s) != nil {
				continue
			}
			text = []byte(s)
		}
		rep, ok := fn(text)
		if !ok {
			continue
		}
		enc, err := json.Marshal(string(rep))
		if err != nil {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(raw)+len(enc))
		}
		out = append(out, raw[last:start]...)
		out = append(out, enc...)
		last = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}
