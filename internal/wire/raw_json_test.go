package wire

import (
	"encoding/json"
	"testing"
)

// RawObject writes what encoding/json writes for compact values (keys
// sorted and escaped alike); RawObjectArray is RawObject with one member
// set to RawArray of the items.
func TestRawObjectArray(t *testing.T) {
	m := map[string]json.RawMessage{"b": json.RawMessage(`{"x":1}`), "a<&>": json.RawMessage(`"s"`), "é": json.RawMessage(`2`), "": json.RawMessage(`null`), "tools": json.RawMessage(`"old"`)}
	want, _ := json.Marshal(m)
	if got := RawObject(m); string(got) != string(want) {
		t.Errorf("RawObject = %s, want %s", got, want)
	}
	for _, items := range [][]json.RawMessage{nil, {json.RawMessage(`{"name":"a"}`)}, {json.RawMessage(`1`), json.RawMessage(`[2]`)}} {
		with := map[string]json.RawMessage{}
		for k, v := range m {
			with[k] = v
		}
		with["tools"] = RawArray(items)
		want := RawObject(with)
		if got := RawObjectArray(m, "tools", items); string(got) != string(want) {
			t.Errorf("RawObjectArray(%s) = %s, want %s", items, got, want)
		}
		delete(with, "tools")
		m2 := map[string]json.RawMessage{}
		for k, v := range with {
			m2[k] = v
		}
		with["tools"] = RawArray(items)
		if got, want := RawObjectArray(m2, "tools", items), RawObject(with); string(got) != string(want) {
			t.Errorf("RawObjectArray without the key (%s) = %s, want %s", items, got, want)
		}
	}
	if m["tools"] == nil || string(m["tools"]) != `"old"` {
		t.Error("RawObjectArray changed its map")
	}
}

// AppendRawObjectArray appends RawObjectArray's bytes to dst, in dst's
// own memory when it has the room.
func TestAppendRawObjectArray(t *testing.T) {
	m := map[string]json.RawMessage{"nextCursor": json.RawMessage(`"c"`)}
	items := []json.RawMessage{json.RawMessage(`{"name":"a"}`), json.RawMessage(`{"name":"b"}`)}
	want := string(RawObjectArray(m, "tools", items))
	if got := AppendRawObjectArray([]byte("x"), m, "tools", items); string(got) != "x"+want {
		t.Fatalf("appended to x: %s", got)
	}
	room := make([]byte, 0, 1024)
	got := AppendRawObjectArray(room, m, "tools", items)
	if string(got) != want || &got[:1][0] != &room[:1][0] {
		t.Fatalf("into room: %s (same memory: %v)", got, &got[:1][0] == &room[:1][0])
	}
	// Items written by a function: the same bytes, whatever the size hint.
	for _, size := range []int{0, 24, 1 << 20} {
		got := AppendRawObjectArrayFunc(nil, m, "tools", len(items), size, func(b []byte, i int) []byte { return append(b, items[i]...) })
		if string(got) != want {
			t.Fatalf("items written by a function (size %d): %s, want %s", size, got, want)
		}
	}
}
