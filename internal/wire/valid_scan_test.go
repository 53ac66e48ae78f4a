package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// validCases are inputs on both sides of each of RFC 8259's rules, where
// a one-pass scanner is most likely to part from encoding/json: string
// escapes and control characters at every offset of an 8-byte word,
// numbers, literals, nesting and its bound, whitespace.
var validCases = []string{
	`{}`, ` {} `, "{\t\"a\"\r\n:1}", `{"a":1}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{"a"}`, `{1:2}`, `{"a":1}}`, `{"a":1}]`, `{"a":[}`,
	`[]`, `[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[{}]`, `[{]}`, `{"a":{"b":[{"c":null}]}}`,
	`0`, `-0`, `01`, `-01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-`, `--1`, `+1`, `1.5e3.2`, `0x10`, `1_0`, `Infinity`, `NaN`,
	`true`, `false`, `null`, `tru`, `nul`, `falsey`, `True`, `nulll`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\'"`, `"\a"`, `"\`, `"a`, `"\u"`,
	"\"a\tb\"", "\"a\x00b\"", "\"a\x1fb\"", "\"\x7f\"", "\"\xff\xfe\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"", `"\ud800"`, `"\udc00\ud800"`,
	`{"k\u0061":"v"}`, `{"k\":"v"}`, "{\"k\x01\":1}", `{"a":1}x`, `{"a":1} 2`, ``, ` `, `x`, "\xef\xbb\xbf{}", "{}\x00",
}

func init() {
	// Each special byte at every position of a word, and words of plain
	// bytes around it, so the eight-byte run and its tail both meet it.
	for _, special := range []string{`"`, `\\`, `\n`, "\n", "\x00", "\x1f", " ", "\x80", `\u0041`, `\u004`, `\q`} {
		for pad := range 17 {
			p := strings.Repeat("a", pad)
			validCases = append(validCases, `{"`+p+special+p+`":"`+p+special+p+`x"}`, `["`+p+special+`"]`)
		}
	}
	deep := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	validCases = append(validCases, deep(10000, "[", "]"), deep(10001, "[", "]"), deep(9999, `{"a":`, "}")+"", `{"a":`+deep(9999, "[", "]")+`}`, `{"a":`+deep(10000, "[", "]")+`}`,
		strings.Repeat("[", 10000)+`1`+strings.Repeat("]", 10000), `[`+deep(9999, `{"a":`, "}")+`]`)
}

// ValidMembers and Valid say what json.Valid says, and ValidMembers
// reports the members encoding/json decodes.
func TestValidMembers_AgreesWithEncodingJSON(t *testing.T) {
	for _, in := range validCases {
		checkValidScan(t, []byte(in))
	}
}

// checkValidScan holds Valid and ValidMembers to encoding/json on b.
func checkValidScan(t *testing.T, b []byte) {
	t.Helper()
	want := json.Valid(b)
	if got := Valid(b); got != want {
		t.Fatalf("Valid(%.80q) = %v, json.Valid %v", b, got, want)
	}
	got := map[string][]byte{}
	var order []string
	ok := ValidMembers(b, func(k, v []byte) bool {
		got[string(k)] = v
		order = append(order, string(k))
		return true
	})
	var m map[string]json.RawMessage
	isObject := want && json.Unmarshal(b, &m) == nil && m != nil
	if ok != isObject {
		t.Fatalf("ValidMembers(%.80q) = %v, encoding/json: valid %v, object %v", b, ok, want, isObject)
	}
	if !ok {
		return
	}
	var walked []string
	Members(b, func(k string, _ []byte) bool { walked = append(walked, k); return true })
	if !reflect.DeepEqual(order, walked) {
		t.Fatalf("ValidMembers(%.80q) saw %q, Members %q", b, order, walked)
	}
	for k, v := range m {
		if string(got[k]) != string(v) {
			t.Fatalf("ValidMembers(%.80q): %q is %q, encoding/json's %q", b, k, got[k], v)
		}
	}
}

// fn returning false stops the walk at once, with ok.
func TestValidMembers_Stops(t *testing.T) {
	var seen []string
	if !ValidMembers([]byte(`{"a":1,"b":2,"c":`), func(k, _ []byte) bool { seen = append(seen, string(k)); return len(seen) < 2 }) {
		t.Fatal("stopped walk not ok")
	}
	if len(seen) != 2 {
		t.Fatalf("saw %q", seen)
	}
}

// BenchmarkValid_ListPage is the check of a backend's answer of 200 tools
// (74 kB): encoding/json's json.Valid then a walk of its top level, as
// decodeBig did, against ValidMembers' one pass.
func BenchmarkValid_ListPage(b *testing.B) {
	in := listPage(200)
	b.Run("json.Valid+Members", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if !json.Valid(in) || !MembersBytes(in, func(_, _ []byte) bool { return true }) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("ValidMembers", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if !ValidMembers(in, func(_, _ []byte) bool { return true }) {
				b.Fatal("invalid")
			}
		}
	})
}

// listPage is a backend's answer of n realistic tools.
func listPage(n int) []byte {
	item := `{"name":"search_issues","title":"search issues","description":"Use this tool to search issues in the workspace the user is signed in to. Results are paginated.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"Free text matched against the issues' title"}},"required":["query"]},"annotations":{"readOnlyHint":true}}`
	return []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Repeat(item+",", n-1) + item + `]}}`)
}
