package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Object and MemberValue read what encoding/json reads, without decoding
// the values: the same members (the last of a repeated key), the same
// bytes; null and absent are the empty object; anything else is refused.
func TestObjectAndMemberValue(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"name":"echo","arguments":{"text":"hi","n":[1,2]}}`,
		` { "a" : 1 , "b" : "x\"y" } `, `{"a":1,"a":2}`, `{"esc\u0061ped":true,"_meta":{"progressToken":7}}`,
	} {
		got, ok := Object([]byte(in))
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", in, ok, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d members, want %d", in, len(got), len(want))
		}
		for k, v := range want {
			var a, b any
			if json.Unmarshal(got[k], &a) != nil || json.Unmarshal(v, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("%s: member %q is %s, want %s", in, k, got[k], v)
			}
			if mv, ok := MemberValue([]byte(in), k); !ok || string(mv) != string(got[k]) {
				t.Errorf("%s: MemberValue(%q) = %s %v", in, k, mv, ok)
			}
		}
	}
	for _, in := range []string{"", "null"} {
		if m, ok := Object([]byte(in)); !ok || len(m) != 0 {
			t.Errorf("%q: %v %v, want the empty object", in, m, ok)
		}
	}
	for _, in := range []string{`[]`, `"s"`, `{"a":`, `{"a" 1}`} {
		if _, ok := Object([]byte(in)); ok {
			t.Errorf("%s: read as an object", in)
		}
	}
	if _, ok := MemberValue([]byte(`{"a":1}`), "b"); ok {
		t.Error("MemberValue found a member that is not there")
	}
}

// BenchmarkObject: a tools/call's params read into members, as the router
// and the upstream client read them, against encoding/json.
func BenchmarkObject(b *testing.B) {
	params := []byte(`{"name":"echo","arguments":{"text":"hello world","items":[1,2,3,4,5],"nested":{"a":"b","c":[true,false,null]}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	b.Run("wire.Object", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := Object(params); !ok {
				b.Fatal("not an object")
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(params, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// WithMember replaces a member where it stands or adds it last, the rest
// byte for byte, and refuses what is not an object.
func TestWithMember(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                   `{"k":1}`,
		`{"a": [1, 2]}`:        `{"a": [1, 2],"k":1}`,
		`{"k":"old","b":true}`: `{"k":1,"b":true}`,
		` {"a":{"k":0}} `:      ` {"a":{"k":0},"k":1} `,
	} {
		if got, ok := WithMember([]byte(in), "k", []byte("1")); !ok || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{`[]`, `{"a":`, ``} {
		if got, ok := WithMember([]byte(in), "k", []byte("1")); ok || string(got) != in {
			t.Errorf("%q: %s %v, want it refused as it is", in, got, ok)
		}
	}
}
