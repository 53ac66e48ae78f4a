package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// elementCases put the walked array's elements and their members on both
// sides of the nesting bound and of each way an array can end badly.
var elementCases = func() []string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []string{
		`{"items":[1,{"a":"]","b":[2]},[2,3],"x"],"next":"c"}`, `{"items":[]}`, ` { "items" : [ 1 , 2 ] } `, `{"items":"no"}`,
		`{"items":[1],"items":[2,3]}`, `{"a":1,"items":[1,]}`, `{"items":[1 2]}`, `{"items":[1}`, `{"items":`, `{"items":[`,
		`{"items":[{"a":tru}]}`, `{"items":[{"a":1,}]}`, `{"items":[{"a" 1}]}`, `{"items":[{1:2}]}`, `{"items":[{"a":"\x"}]}`,
		"{\"items\":[{\"a\x01\":1}]}", `{"items":[-01]}`, `{"items":[{"a":1}}`, `{"items":[{"a":1}],}`, `{"Items":[1]}`,
		`{"items":[{"name":"x","inputSchema":{"type":"object","properties":{"s":{"type":"string"}}}}],"nextCursor":"n"}`,
	}
	for _, n := range []int{9996, 9997, 9998, 9999} {
		cases = append(cases, `{"items":[`+deep(n)+`]}`, `{"items":[{"a":`+deep(n)+`}]}`)
	}
	return cases
}()

// ValidMembersElementMembers says what encoding/json says of b (valid,
// an object), at its own depth and one deeper, and on valid input calls
// back with what Members, Elements and MembersAt find, in the walk's
// order: an item's members, then the item, and the array's member after
// its items.
func TestValidMembersElementMembers_AgreesWithEncodingJSON(t *testing.T) {
	for _, in := range append(append([]string(nil), validCases...), elementCases...) {
		checkValidElementMembers(t, []byte(in))
	}
}

// walkLog records a walk's callbacks in order.
type walkLog []string

func (l *walkLog) fn(k string, v []byte) { *l = append(*l, k+"="+string(v)) }
func (l *walkLog) member(k []byte, start, end int) {
	*l = append(*l, fmt.Sprintf("%s@%d-%d", k, start, end))
}
func (l *walkLog) elem(e []byte) { *l = append(*l, "item "+string(e)) }

func checkValidElementMembers(t *testing.T, b []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	want := json.Valid(b) && json.Unmarshal(b, &m) == nil && m != nil
	var got walkLog
	if ok := ValidMembersElementMembers(b, 0, "items", got.fn, got.member, got.elem); ok != want {
		t.Fatalf("ValidMembersElementMembers(%.80q) = %v, encoding/json: a valid object %v", b, ok, want)
	}
	// One level deeper: as encoding/json judges b as a member's value.
	nested := append(append([]byte(`{"result":`), b...), '}')
	wantNested := want && json.Valid(nested)
	if ok := ValidMembersElementMembers(b, 1, "items", func(string, []byte) {}, nil, func([]byte) {}); ok != wantNested {
		t.Fatalf("ValidMembersElementMembers(%.80q, depth 1) = %v, encoding/json %v", b, ok, wantNested)
	}
	if !want {
		return
	}
	var walked walkLog
	Members(b, func(k string, v []byte) bool {
		if k == "items" && v[0] == '[' {
			Elements(v, func(e []byte) bool {
				if e[0] == '{' {
					MembersAt(e, func(k []byte, start, end int) bool { walked.member(k, start, end); return true })
				}
				walked.elem(e)
				return true
			})
		}
		walked.fn(k, v)
		return true
	})
	if !reflect.DeepEqual(got, walked) {
		t.Fatalf("ValidMembersElementMembers(%.80q) saw %q, Members+Elements+MembersAt %q", b, got, walked)
	}
}

// A result left to the caller's check decodes to what DecodeOwned gives,
// whether the check takes it or refuses it (then encoding/json decides);
// the check is given the result's bytes.
func TestDecodeOwnedChecked(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"c"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]`, // cut short
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":tru}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":[1]}`, `{"jsonrpc":"2.0","id":1,"result":null}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":1,"res\u0075lt":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`,
	} {
		checkDecodeOwnedChecked(t, []byte(in))
	}
}

func checkDecodeOwnedChecked(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := DecodeOwned(in)
	var checked [][]byte
	walk := func(data []byte, i int) int {
		end := ValidMembersElementMembersAt(data, i, 1, "tools", func(string, []byte) {}, nil, func([]byte) {})
		if end >= 0 {
			checked = append(checked, data[i:end])
		}
		return end
	}
	refuse := func([]byte, int) int { return -1 }
	for name, check := range map[string]func([]byte, int) int{"walk": walk, "refuse": refuse} {
		got, err := DecodeOwnedChecked(in, check)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%q, check %s: error %v, DecodeOwned %v", in, name, err, wantErr)
		}
		if err != nil {
			continue
		}
		g, _ := jsonrpc.EncodeMessage(got)
		w, _ := jsonrpc.EncodeMessage(want)
		if string(g) != string(w) {
			t.Fatalf("%q, check %s: %s, DecodeOwned %s", in, name, g, w)
		}
	}
	for _, r := range checked {
		if !json.Valid(r) {
			t.Fatalf("%q: the check took %q, which is not JSON", in, r)
		}
	}
}

// BenchmarkListPageAnswer is a list page's answer of 200 tools (74 kB)
// decoded and walked for its items and their members: checked whole by
// the decoder, then walked (with checks: without DecodeOwnedChecked),
// against the check done in the walk alone.
func BenchmarkListPageAnswer(b *testing.B) {
	in := listPage(200)
	walk := func(b *testing.B, result []byte, walker func([]byte) bool) {
		if !walker(result) {
			b.Fatal("walk failed")
		}
	}
	walkAgain := func(r []byte) bool {
		n := 0
		return ValidMembersElementMembers(r, 1, "tools", func(string, []byte) {},
			func([]byte, int, int) {}, func([]byte) { n++ }) && n == 200
	}
	validWalk := func(data []byte, i int) int {
		n := 0
		end := ValidMembersElementMembersAt(data, i, 1, "tools", func(string, []byte) {},
			func([]byte, int, int) {}, func([]byte) { n++ })
		if n != 200 {
			return -1
		}
		return end
	}
	b.Run("DecodeOwned+walk", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			msg, err := DecodeOwned(in)
			if err != nil {
				b.Fatal(err)
			}
			walk(b, msg.(*jsonrpc.Response).Result, walkAgain)
		}
	})
	b.Run("DecodeOwnedChecked", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			msg, err := DecodeOwnedChecked(in, validWalk)
			if err != nil || len(msg.(*jsonrpc.Response).Result) == 0 {
				b.Fatal(err)
			}
		}
	})
}
