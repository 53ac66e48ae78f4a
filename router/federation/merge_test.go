package federation

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/naming"
)

// renameItem rewrites a list item's name (and URI) in place and nothing
// else: the same members, in the same order, the rest byte for byte; an
// MCP Apps tool's UI resource is renamed; a malformed item is an error.
func TestRenameItem(t *testing.T) {
	nm := Naming{Aliases: naming.NewAliases(map[string]map[string]string{"one": {"Nice": "raw"}})} // of two backends
	for _, c := range []struct {
		name, op, in, want, published, id string
	}{
		{"a tool", "tools/list", `{"name":"echo", "description":"a <b>", "inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			`{"name":"one-echo", "description":"a <b>", "inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`, "one-echo", "one-echo"},
		{"an aliased tool", "tools/list", `{"name":"raw","title":"R"}`, `{"name":"Nice","title":"R"}`, "Nice", "Nice"},
		{"a resource", "resources/list", `{"uri":"file:///a","name":"a"}`, `{"uri":"one-file:///a","name":"one-a"}`, "one-a", "one-file:///a"},
		{"a UI resource template", "resources/templates/list", `{"name":"t","uriTemplate":"ui://w/{id}"}`, `{"name":"one-t","uriTemplate":"ui://one/w/{id}"}`, "one-t", "ui://one/w/{id}"},
		{"an escaped name", "prompts/list", `{"name":"caf\u00e9"}`, `{"name":"one-café"}`, "one-café", "one-café"},
		{"an app tool", "tools/list", `{"name":"clock","_meta":{"ui":{"resourceUri":"ui://clock/app.html"}}}`,
			`{"_meta":{"ui":{"resourceUri":"ui://one/clock/app.html"}},"name":"one-clock"}`, "one-clock", "one-clock"},
		{"no name", "prompts/list", `{"description":"x"}`, `{"description":"x","name":"one-"}`, "one-", "one-"},
		{"a resource, name first", "resources/list", `{"name" : "a" ,"size":1, "uri": "file:///a"}`, `{"name":"one-a","size":1,"uri":"one-file:///a"}`, "one-a", "one-file:///a"},
		{"a resource without a URI", "resources/list", `{"name":"a"}`, `{"name":"one-a"}`, "one-a", ""},
		{"a name twice", "tools/list", `{"name":"x","d":1,"name":"y"}`, `{"name":"one-y","d":1}`, "one-y", "one-y"},
		{"a URI twice", "resources/list", `{"uri":"a:1","name":"n","uri":"a:2"}`, `{"uri":"one-a:2","name":"one-n"}`, "one-n", "one-a:2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, published, id, err := nm.RenameItem(ops[c.op], "one", json.RawMessage(c.in))
			if err != nil || published != c.published || id != c.id {
				t.Fatalf("renamed %q / %q (%v), want %q / %q", published, id, err, c.published, c.id)
			}
			if !json.Valid(out) {
				t.Fatalf("not JSON: %s", out)
			}
			var got, want any
			_ = json.Unmarshal(out, &got)
			_ = json.Unmarshal([]byte(c.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("renamed to %s, want %s", out, c.want)
			}
			if exact, ok := map[string]string{
				"a resource, name first": `{"name" : "one-a" ,"size":1, "uri": "one-file:///a"}`,
				"a name twice":           `{"name":"one-y","d":1,"name":"one-y"}`, // as wire.Splice: every one
				"a URI twice":            `{"uri":"one-a:2","name":"one-n","uri":"one-a:2"}`,
			}[c.name]; ok && string(out) != exact {
				t.Fatalf("renamed to %s, want these bytes: %s", out, exact)
			}
			if c.name == "a tool" && string(out) != c.want {
				t.Fatalf("the rest of the item changed: %s", out)
			}
		})
	}
	for _, bad := range []string{`"a string"`, `{"name":3}`, `{"name":"x"`, `[]`} {
		if _, _, _, err := nm.RenameItem(ops["tools/list"], "one", json.RawMessage(bad)); err == nil {
			t.Errorf("%s renamed, want an error", bad)
		}
	}
}

// A cached page of a multi-backend vhost, once renamed, holds its items
// once: dropRaw lets the backend's answer go and keeps copies of its
// small members; the page's size and merge are unchanged.
func TestPageDropRaw(t *testing.T) {
	nm := multi
	op := ops["tools/list"]
	answer := []byte(`{"tools":[{"name":"b"},{"name":"a"}],"nextCursor":"c2","ttlMs":5}`)
	p := &Page{Key: "one", Queried: true}
	if !p.Decode(answer, op, 0) {
		t.Fatal("page does not decode")
	}
	var err error
	if p.Named, err = nm.RenameAll(op, "one", p.Items, p.Scans, true); err != nil {
		t.Fatal(err)
	}
	p.DropRaw(op)
	for i := range answer {
		answer[i] = 'x' // nothing kept may point into the answer
	}
	if p.Items != nil || p.Size() != 2 || p.Next != "c2" {
		t.Errorf("items %v, size %d, next %q", p.Items, p.Size(), p.Next)
	}
	if _, ok := p.Result["tools"]; ok || string(p.Result["nextCursor"]) != `"c2"` || string(p.Result["ttlMs"]) != `5` {
		t.Errorf("result %s", p.Result)
	}
	if got := string(p.Named[0].Raw) + string(p.Named[1].Raw); got != `{"name":"one-b"}{"name":"one-a"}` {
		t.Errorf("named items %s", got)
	}
}

// renameAll writes a page's renamed items end to end into shared room:
// each is what renameItem makes of it, however far a page outgrows the
// room's first estimate, and none can grow into its neighbour.
func TestRenameAll_SharedRoom(t *testing.T) {
	nm := multi
	for _, op := range []Op{ops["tools/list"], ops["resources/list"]} {
		var items []json.RawMessage
		for i := range 3000 {
			// Names that escape grow past the estimate: new chunks.
			items = append(items, json.RawMessage(fmt.Sprintf(`{"name":"t%d%s","uri":"u:%d","d":"%s"}`, i, strings.Repeat(`\u00e9`, i%7), i, strings.Repeat("x", i%50))))
		}
		named, err := nm.RenameAll(op, "one", items, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range named {
			want, _, _, _ := nm.RenameItem(op, "one", items[i])
			if string(n.Raw) != string(want) || cap(n.Raw) != len(n.Raw) {
				t.Fatalf("%s item %d: %s (cap %d), want %s", op.Method, i, n.Raw, cap(n.Raw), want)
			}
		}
		grown := append(named[0].Raw, `,"x":1`...)
		if string(named[1].Raw) != func() string { w, _, _, _ := nm.RenameItem(op, "one", items[1]); return string(w) }() || &grown[0] == &named[0].Raw[0] {
			t.Fatalf("%s: growing an item reached its neighbour", op.Method)
		}
	}
}

// A request lent a page buffer builds its one list page in it, the same
// bytes as without; a second page of the same request gets memory of its
// own; the buffer given back serves the next request.
func TestLendPageBuffer(t *testing.T) {
	op := ops["tools/list"]
	l := &List{Op: op, VHost: "v", Principal: "alice", Keys: []string{"one", "two"}, Naming: multi, MaxItems: 1000}
	page := func(lent *PageBuffer) json.RawMessage {
		res := &Page{Key: "one", Queried: true}
		if !res.Decode([]byte(`{"tools":[{"name":"b"},{"name":"a"}]}`), op, 0) {
			t.Fatal("page does not decode")
		}
		out, err := l.Merge(t.Context(), newScriptedSource(), []*Page{res}, false, nil, lent)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := string(page(nil))
	pb, release := LendPageBuffer()
	first := page(pb)
	if string(first) != want || &first[0] != &pb.b[:1][0] {
		t.Fatalf("lent page %s (in the buffer: %v), want %s", first, &first[0] == &pb.b[:1][0], want)
	}
	if second := page(pb); string(second) != want || &second[0] == &first[0] {
		t.Fatalf("second page %s shares the first's memory", second)
	}
	release()
	if pb.lent.Load() || len(pb.b) != 0 {
		t.Fatal("a buffer given back is still lent")
	}
	pb2, release2 := LendPageBuffer()
	defer release2()
	if got := page(pb2); string(got) != want {
		t.Fatalf("page after reuse %s", got)
	}
}

// A single-backend vhost passes its items through: renaming them
// allocates no room for copies.
func TestRenameAll_PassThroughAllocatesNoRoom(t *testing.T) {
	nm := Naming{Single: true}
	items := make([]json.RawMessage, 1000)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"name":"t%d","description":"%s"}`, i, strings.Repeat("x", 700)))
	}
	allocated := testing.AllocsPerRun(5, func() {
		if _, err := nm.RenameAll(ops["tools/list"], "one", items, nil, true); err != nil {
			t.Fatal(err)
		}
	})
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, _ = nm.RenameAll(ops["tools/list"], "one", items, nil, true)
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - before; grew > 200<<10 {
		t.Fatalf("renaming 1,000 passed-through items allocated %d bytes (%v allocations)", grew, allocated)
	}
}

// What decode finds of each item while crossing a page (itemScan) renames
// it exactly as a walk of the item does: names escaped or repeated,
// members in any order, _meta, URIs.
func TestRenameAll_DecodedScansAgree(t *testing.T) {
	nm := multi
	items := []string{
		`{"name":"a","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		`{"uri":"file:///x<y>","name":"i<&>\u2028"}`,
		`{"description":"x","name":"b\u00e9","uri":"file:///b"}`,
		`{ "name" : "c" , "_meta" : {"ui":{"resourceUri":"ui://one/app"}} }`,
		`{"name":"d","name":"e"}`,
		`{"uri":"file:///f","name":"f","uri":"file:///g"}`,
		`{"title":"no name"}`,
		`{"_meta":{"k":1},"name":"h","_meta":null}`,
	}
	for _, op := range []Op{ops["tools/list"], ops["resources/list"], ops["resources/templates/list"]} {
		answer := []byte(`{"` + op.Field + `":[` + strings.Join(items, ",") + `],"nextCursor":"n"}`)
		p := &Page{Key: "one"}
		if !p.Decode(answer, op, 0) || len(p.Scans) != len(items) {
			t.Fatalf("%s: decode: %d items, %d scans", op.Method, len(p.Items), len(p.Scans))
		}
		got, err := nm.RenameAll(op, "one", p.Items, p.Scans, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := nm.RenameAll(op, "one", p.Items, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		// Renamed as the page is written (uncached pages), the same bytes.
		later, err := nm.RenameAll(op, "one", p.Items, p.Scans, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range later {
			if out := later[i].appendTo(nil); string(out) != string(want[i].Raw) || len(out) != later[i].size() {
				t.Errorf("%s item %d written renamed: %s (size %d), want %s", op.Method, i, out, later[i].size(), want[i].Raw)
			}
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].ID != want[i].ID || string(got[i].Raw) != string(want[i].Raw) {
				t.Errorf("%s item %d: %q %q %s, walked: %q %q %s", op.Method, i, got[i].Name, got[i].ID, got[i].Raw, want[i].Name, want[i].ID, want[i].Raw)
			}
		}
	}
}
