package naming

import (
	"sort"
	"strings"
)

// Splitter maps a downstream identifier ("gateway-one-increment") back to
// the backend key and the backend's own identifier ("gateway-one",
// "increment").
//
// Keys are tried longest first, so with keys "gw" and "gw-one" the
// identifier "gw-one-x" goes to "gw-one". Config validation already rejects
// key sets where that choice would be ambiguous ("gw" and "gw-x" with an
// identifier "gw-x-y" could mean either); the ordering makes the rule
// explicit rather than an accident of map iteration.
type Splitter struct {
	keys []string // longest first, ties in lexical order
}

func NewSplitter(keys []string) *Splitter {
	ks := append([]string(nil), keys...)
	sort.Slice(ks, func(i, j int) bool {
		if len(ks[i]) != len(ks[j]) {
			return len(ks[i]) > len(ks[j])
		}
		return ks[i] < ks[j]
	})
	return &Splitter{keys: ks}
}

// Split returns the backend key and the stripped identifier. It requires a
// '-' right after the key and a non-empty rest: "gateway-oneincrement" and
// "gateway-one-" are both rejected.
func (s *Splitter) Split(id string) (key, rest string, ok bool) {
	for _, k := range s.keys {
		if len(id) > len(k)+1 && strings.HasPrefix(id, k) && id[len(k)] == '-' {
			return k, id[len(k)+1:], true
		}
	}
	return "", "", false
}

// Prefix is the inverse of split.
func Prefix(key, id string) string { return key + "-" + id }
