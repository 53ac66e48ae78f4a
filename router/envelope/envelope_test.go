package envelope

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var gateway = json.RawMessage(`{"name":"mcpgw","version":"dev"}`)

// A result for a 2026-07-28 client gets the envelope; the same result on
// its way to a 2025-era session loses it again, byte for byte.
func TestDecorateThenStrip(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		hints        *Hints
		want         string
	}{
		{"a tool result", `{"content":[{"type":"text","text":"hi"}]}`, nil,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`},
		{"a list page, private", `{"tools":[]}`, &Hints{TTLMs: 5000, Private: true},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"cacheScope":"private","resultType":"complete","tools":[],"ttlMs":5000}`},
		{"an interim result keeps no hints", `{"resultType":"input_required","ttlMs":9,"cacheScope":"public"}`, &Hints{TTLMs: 5000},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"resultType":"input_required"}`},
		{"a task keeps its ttlMs", `{"resultType":"task","taskId":"t1","status":"working","ttlMs":60000,"cacheScope":"public"}`, &Hints{TTLMs: 5},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"resultType":"task","status":"working","taskId":"t1","ttlMs":60000}`},
		{"a backend's own hints stand, private wins", `{"contents":[],"ttlMs":60000,"cacheScope":"public"}`, &Hints{FromResult: true, Private: true},
			`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpgw","version":"dev"}},"cacheScope":"private","contents":[],"resultType":"complete","ttlMs":60000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decorate(json.RawMessage(tc.result), tc.hints, gateway)
			var g, w any // members in any order
			if err != nil || json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(tc.want), &w) != nil || !reflect.DeepEqual(g, w) {
				t.Fatalf("Decorate: %s, %v\nwant %s", got, err, tc.want)
			}
			stripped := Strip(got)
			var m map[string]json.RawMessage
			if err := json.Unmarshal(stripped, &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"resultType", "ttlMs", "cacheScope", "_meta"} {
				if _, ok := m[f]; ok {
					t.Errorf("Strip kept %s: %s", f, stripped)
				}
			}
		})
	}
	plain := json.RawMessage(`{"content":[],  "isError":false}`)
	if got := Strip(plain); string(got) != string(plain) {
		t.Fatalf("a result with no envelope changed: %s", got)
	}
}

// HintsOf: a backend that says nothing allows no caching; Merge keeps the
// shorter lifetime and private if either is.
func TestHints(t *testing.T) {
	if h := HintsOf(map[string]json.RawMessage{}); h != (Hints{}) {
		t.Fatalf("no fields: %+v", h)
	}
	a := HintsOf(map[string]json.RawMessage{"ttlMs": json.RawMessage(`3000`), "cacheScope": json.RawMessage(`"private"`)})
	b := Hints{TTLMs: 9000}
	if got := a.Merge(b); got != (Hints{TTLMs: 3000, Private: true}) {
		t.Fatalf("merge: %+v", got)
	}
}

// Decorate without hints works on the result's bytes (decorateRaw); it
// must give what the decoding path gives, member for member, and leave to
// that path what it cannot read.
func TestDecorateRawMatchesTheDecodingPath(t *testing.T) {
	info := json.RawMessage(`{"name":"mcpgw","version":"1"}`)
	for _, in := range []string{
		`{}`,
		`{"content":[{"type":"text","text":"hi"}],"isError":false}`,
		`{"content":[],"resultType":"complete","ttlMs":5,"cacheScope":"public"}`,
		`{"resultType":"input_required","inputRequests":{"a":{}},"ttlMs":5,"cacheScope":"private","requestState":"s"}`,
		`{"resultType":"task","taskId":"t","ttlMs":60000,"cacheScope":"public"}`,
		`{"resultType":"","x":1}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"backend"},"other":true},"content":[]}`,
		`{"_meta":{},"content":[]}`,
		`{"_meta":null,"content":[]}`,
		`{"_meta":{"k":"v"}, "structuredContent": {"a": [1, 2]} }`,
		`{"esc\u0061ped":"v","_meta":{"k":1}}`,
	} {
		fast, ok := decorateRaw([]byte(in), info)
		if !ok {
			t.Errorf("%s: decorateRaw left it to the decoding path", in)
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		if m == nil {
			m = map[string]json.RawMessage{}
		}
		DecorateFields(m, nil, info)
		slow, _ := json.Marshal(m)
		var a, b any
		if json.Unmarshal(fast, &a) != nil || json.Unmarshal(slow, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\n fast %s\n slow %s", in, fast, slow)
		}
	}
	for _, in := range []string{`[]`, `{"resultType":5}`, `{"_meta":"x"}`, `{"a":`} {
		if out, ok := decorateRaw([]byte(in), info); ok {
			t.Errorf("%s: decorateRaw gave %s, want the decoding path", in, out)
		}
	}
}

// BenchmarkDecorate: a routed tools/call result of about 1 KB decorated
// for a 2026-07-28 client (the bytes path; the decoding path is what
// hints take).
func BenchmarkDecorate(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 80) + `"}],"structuredContent":{"ok":true,"n":[1,2,3]},"isError":false,"_meta":{"trace":"abc"}}`)
	for _, tc := range []struct {
		name  string
		hints *Hints
	}{{"bytes", nil}, {"decoded", &Hints{FromResult: true}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decorate(result, tc.hints, gateway); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Strip on the bytes (stripRaw) gives what the decoding path gives.
func TestStripRawMatchesTheDecodingPath(t *testing.T) {
	for _, in := range []string{
		`{"content":[],"resultType":"complete","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b"}}}`,
		`{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b"},"trace":"x"}}`,
		`{"resultType":"task","taskId":"t","_meta":null}`,
		`{"content":[{"type":"text","text":"ttlMs"}]}`,
		`{"a":1, "resultType" : "complete" ,"b":{"c":[1,2]}}`,
	} {
		fast, ok := stripRaw([]byte(in))
		if !ok {
			t.Errorf("%s: left to the decoding path", in)
			continue
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(in), &m)
		for _, f := range modernEnvelopeFields {
			delete(m, f)
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(m["_meta"], &meta) == nil && meta != nil {
			delete(meta, MetaServerInfo)
			if len(meta) == 0 {
				delete(m, "_meta")
			} else {
				m["_meta"], _ = json.Marshal(meta)
			}
		}
		slow, _ := json.Marshal(m)
		var a, b any
		if json.Unmarshal(fast, &a) != nil || json.Unmarshal(slow, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\n fast %s\n slow %s", in, fast, slow)
		}
	}
	for _, in := range []string{`[]`, `{"_meta":"x","resultType":"complete"}`, `{"a":`} {
		if out, ok := stripRaw([]byte(in)); ok {
			t.Errorf("%s: stripRaw gave %s", in, out)
		}
	}
}

// FuzzEnvelope: on any result encoding/json reads as an object, the
// bytes paths (decorateRaw, stripRaw) give what the decoding paths give,
// or leave the result to them; they never panic.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{`{}`, `{"content":[],"resultType":"complete","ttlMs":1,"cacheScope":"public"}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b"},"k":1},"resultType":"task","ttlMs":5}`,
		`{"_meta":null}`, `{"resultType":"input_required","inputRequests":{}}`, `{"a":"\u005f"}`, `[1]`} {
		f.Add([]byte(s))
	}
	same := func(a, b []byte) bool {
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, okD := decorateRaw(b, gateway)
		stripped, okS := stripRaw(b)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil {
			return
		}
		if okD {
			d := map[string]json.RawMessage{}
			_ = json.Unmarshal(b, &d)
			DecorateFields(d, nil, gateway)
			slow, _ := json.Marshal(d)
			if !same(fast, slow) {
				t.Fatalf("decorate %q:\n fast %s\n slow %s", b, fast, slow)
			}
		}
		if okS {
			if slow := Strip(b); !same(stripped, slow) {
				t.Fatalf("strip %q:\n fast %s\n slow %s", b, stripped, slow)
			}
		}
	})
}
