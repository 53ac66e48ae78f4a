package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// On valid JSON, Members sees what encoding/json decodes (the last of
// duplicate keys wins there; Members reports each), Elements the same
// elements, and Splice changes nothing but the replaced values.
func TestRawScan_AgreesWithEncodingJSON(t *testing.T) {
	for _, src := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"name":"x","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"n":[1,2,{"x":"]}"}]}`,
		`{"n\u0061me":"esc","s":"a\"b\\c","u":"\u00e9t\u00e9","t":true,"f":false,"z":null,"e":-1.5e+3}`,
		"{\n  \"name\" :\t\"spaced\" ,\n \"k\" : [ ] \n}",
	} {
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(src), &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{}
		if !Members([]byte(src), func(k string, v []byte) bool { got[k] = v; return true }) {
			t.Fatalf("Members(%s) failed", src)
		}
		if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
			t.Fatalf("Members(%s) = %s, want %s", src, got, want)
		}
		out, ok := Splice([]byte(src), Member{"name", []byte(`"p-x"`)})
		if !ok || !json.Valid(out) {
			t.Fatalf("Splice(%s) = %s, %v", src, out, ok)
		}
		var after map[string]json.RawMessage
		_ = json.Unmarshal(out, &after)
		if _, had := want["name"]; had {
			want["name"] = json.RawMessage(`"p-x"`)
		}
		if !reflect.DeepEqual(normalize(t, after), normalize(t, want)) {
			t.Fatalf("Splice(%s) = %s", src, out)
		}
	}
	var n int
	if !Elements([]byte(` [ {"a":"]"}, "x" ,3, [1,[2]] ,null]`), func(v []byte) bool { n++; return json.Valid(v) }) || n != 5 {
		t.Fatalf("Elements saw %d", n)
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1`, `[1,]`, `{"a":"x}`, `{"a":1}x`, `"s"`, `[`, `{"a" 1}`} {
		if Members([]byte(bad), func(string, []byte) bool { return true }) && Elements([]byte(bad), func([]byte) bool { return true }) {
			t.Errorf("%q accepted", bad)
		}
	}
	if s, ok := String([]byte(`"a\u0041\n"`)); !ok || s != "aA\n" {
		t.Fatalf("String: %q %v", s, ok)
	}
	if q := string(Quoted("x<y")); q != `"x\u003cy"` {
		t.Fatalf("Quoted: %s", q)
	}
}

// Quoted, AppendQuoted and QuotedLen agree with json.Marshal on strings
// that need no escaping and on every kind that does.
func TestQuoted_AgreesWithMarshal(t *testing.T) {
	for _, s := range []string{"", "plain-name_1", "x<y>&z", "é", "tab\t", "quote\"", `back\slash`, "\u2028\u2029", "\x00", "bad\xff"} {
		want, _ := json.Marshal(s)
		if got := Quoted(s); string(got) != string(want) {
			t.Errorf("Quoted(%q) = %s, want %s", s, got, want)
		}
		if got := AppendQuoted([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendQuoted(%q) = %s", s, got)
		}
		if n := QuotedLen(s); n != len(want) {
			t.Errorf("QuotedLen(%q) = %d, want %d", s, n, len(want))
		}
	}
}

func normalize(t *testing.T, m map[string]json.RawMessage) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("member %q: %v", k, err)
		}
		out[k] = x
	}
	return out
}

// FuzzMembers: no input panics the walkers, and on an object encoding/json
// accepts, Members agrees with it on every key it reports. The validating
// scanner (ValidMembers, Valid) agrees with encoding/json on every input:
// valid or not, and the same members.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"name":"x","a":[1,{"b":"}"}]}`, `{"n\u0061me":"e"}`, `[1,2]`, `{"a":`, `{"a":"\"}`, `{}`,
		"{\"a\":\"\x01\"}", `{"a":"\u00zz"}`, `{"a":-01}`, `{"a":1.e5}`, `{"a":[tru]}`, "{\"aaaaaaaaaa\\\"aaaaaaa\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkValidScan(t, b)
		checkValidElementMembers(t, b)
		got := map[string][]byte{}
		ok := Members(b, func(k string, v []byte) bool { got[k] = v; return true })
		Elements(b, func([]byte) bool { return true })
		_, _ = Splice(b, Member{"name", []byte(`"z"`)})
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		if !ok {
			t.Fatalf("Members refused an object encoding/json takes: %q", b)
		}
		for k, v := range want {
			if !json.Valid(got[k]) || !jsonEqual(got[k], v) {
				t.Fatalf("key %q: %q, want %q", k, got[k], v)
			}
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// Each value's place is where Members finds it.
func TestMembersAt(t *testing.T) {
	b := []byte(`{"name" : "x", "n":[1,{"a":2}]}`)
	MembersAt(b, func(k []byte, start, end int) bool {
		if v, _ := MemberValue(b, string(k)); string(v) != string(b[start:end]) {
			t.Fatalf("%s at %d:%d is %q, want %q", k, start, end, b[start:end], v)
		}
		return true
	})
}
