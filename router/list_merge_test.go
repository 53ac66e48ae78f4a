package router

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/sealed"
	"github.com/mcpgw/gateway/router/upstream"
)

// renameItem rewrites a list item's name (and URI) in place and nothing
// else: the same members, in the same order, the rest byte for byte; an
// MCP Apps tool's UI resource is renamed; a malformed item is an error.
func TestRenameItem(t *testing.T) {
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: map[string]*Backend{
		"one": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}, ToolNameAliases: map[string]string{"Nice": "raw"}},
		"two": {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}},
	}}})
	t.Cleanup(table.close)
	v := table.vhosts["v"]
	r := &Router{}
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
			out, published, id, err := r.fed.renameItem(v, listOps[c.op], "one", json.RawMessage(c.in))
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
		if _, _, _, err := r.fed.renameItem(v, listOps["tools/list"], "one", json.RawMessage(bad)); err == nil {
			t.Errorf("%s renamed, want an error", bad)
		}
	}
}

// A cached page of a multi-backend vhost, once renamed, holds its items
// once: dropRaw lets the backend's answer go and keeps copies of its
// small members; the page's size and merge are unchanged.
func TestPageResultDropRaw(t *testing.T) {
	v := offlineVHost(t, "one", "two")
	r := New(nil, Options{})
	op := listOps["tools/list"]
	answer := []byte(`{"tools":[{"name":"b"},{"name":"a"}],"nextCursor":"c2","ttlMs":5}`)
	p := &pageResult{key: "one", queried: true}
	if !p.decode(answer, op, 0) {
		t.Fatal("page does not decode")
	}
	var err error
	if p.named, err = r.fed.renameAll(v, op, "one", p.items, p.scans, true); err != nil {
		t.Fatal(err)
	}
	p.dropRaw(op)
	for i := range answer {
		answer[i] = 'x' // nothing kept may point into the answer
	}
	if p.items != nil || p.size() != 2 || p.next != "c2" {
		t.Errorf("items %v, size %d, next %q", p.items, p.size(), p.next)
	}
	if _, ok := p.result["tools"]; ok || string(p.result["nextCursor"]) != `"c2"` || string(p.result["ttlMs"]) != `5` {
		t.Errorf("result %s", p.result)
	}
	if got := string(p.named[0].item) + string(p.named[1].item); got != `{"name":"one-b"}{"name":"one-a"}` {
		t.Errorf("named items %s", got)
	}
}

// renameAll writes a page's renamed items end to end into shared room:
// each is what renameItem makes of it, however far a page outgrows the
// room's first estimate, and none can grow into its neighbour.
func TestRenameAll_SharedRoom(t *testing.T) {
	v := offlineVHost(t, "one", "two")
	r := New(nil, Options{})
	for _, op := range []listOp{listOps["tools/list"], listOps["resources/list"]} {
		var items []json.RawMessage
		for i := range 3000 {
			// Names that escape grow past the estimate: new chunks.
			items = append(items, json.RawMessage(fmt.Sprintf(`{"name":"t%d%s","uri":"u:%d","d":"%s"}`, i, strings.Repeat(`\u00e9`, i%7), i, strings.Repeat("x", i%50))))
		}
		named, err := r.fed.renameAll(v, op, "one", items, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range named {
			want, _, _, _ := r.fed.renameItem(v, op, "one", items[i])
			if string(n.item) != string(want) || cap(n.item) != len(n.item) {
				t.Fatalf("%s item %d: %s (cap %d), want %s", op.method, i, n.item, cap(n.item), want)
			}
		}
		grown := append(named[0].item, `,"x":1`...)
		if string(named[1].item) != func() string { w, _, _, _ := r.fed.renameItem(v, op, "one", items[1]); return string(w) }() || &grown[0] == &named[0].item[0] {
			t.Fatalf("%s: growing an item reached its neighbour", op.method)
		}
	}
}

// A request lent a page buffer builds its one list page in it, the same
// bytes as without; a second page of the same request gets memory of its
// own; the buffer given back serves the next request.
func TestLendPageBuffer(t *testing.T) {
	v := offlineVHost(t, "one", "two")
	r := New(nil, Options{CursorSecret: []byte("0123456789abcdef0123456789abcdef")})
	op := listOps["tools/list"]
	page := func(lent *PageBuffer) json.RawMessage {
		res := &pageResult{key: "one", queried: true}
		if !res.decode([]byte(`{"tools":[{"name":"b"},{"name":"a"}]}`), op, 0) {
			t.Fatal("page does not decode")
		}
		out, err := r.fed.mergePages(t.Context(), v, op, "alice", v.access.Decide("v", nil), map[string]sealed.BackendCursor{}, []*pageResult{res}, false, nil, lent)
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
	v := offlineVHost(t, "one")
	r := New(nil, Options{})
	items := make([]json.RawMessage, 1000)
	for i := range items {
		items[i] = json.RawMessage(fmt.Sprintf(`{"name":"t%d","description":"%s"}`, i, strings.Repeat("x", 700)))
	}
	allocated := testing.AllocsPerRun(5, func() {
		if _, err := r.fed.renameAll(v, listOps["tools/list"], "one", items, nil, true); err != nil {
			t.Fatal(err)
		}
	})
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, _ = r.fed.renameAll(v, listOps["tools/list"], "one", items, nil, true)
	runtime.ReadMemStats(&ms)
	if grew := ms.TotalAlloc - before; grew > 200<<10 {
		t.Fatalf("renaming 1,000 passed-through items allocated %d bytes (%v allocations)", grew, allocated)
	}
}

// What decode finds of each item while crossing a page (itemScan) renames
// it exactly as a walk of the item does: names escaped or repeated,
// members in any order, _meta, URIs.
func TestRenameAll_DecodedScansAgree(t *testing.T) {
	v := offlineVHost(t, "one", "two")
	r := New(nil, Options{})
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
	for _, op := range []listOp{listOps["tools/list"], listOps["resources/list"], listOps["resources/templates/list"]} {
		answer := []byte(`{"` + op.field + `":[` + strings.Join(items, ",") + `],"nextCursor":"n"}`)
		p := &pageResult{key: "one"}
		if !p.decode(answer, op, 0) || len(p.scans) != len(items) {
			t.Fatalf("%s: decode: %d items, %d scans", op.method, len(p.items), len(p.scans))
		}
		got, err := r.fed.renameAll(v, op, "one", p.items, p.scans, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := r.fed.renameAll(v, op, "one", p.items, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		// Renamed as the page is written (uncached pages), the same bytes.
		later, err := r.fed.renameAll(v, op, "one", p.items, p.scans, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range later {
			if out := later[i].appendTo(nil); string(out) != string(want[i].item) || len(out) != later[i].size() {
				t.Errorf("%s item %d written renamed: %s (size %d), want %s", op.method, i, out, later[i].size(), want[i].item)
			}
		}
		for i := range want {
			if got[i].name != want[i].name || got[i].id != want[i].id || string(got[i].item) != string(want[i].item) {
				t.Errorf("%s item %d: %q %q %s, walked: %q %q %s", op.method, i, got[i].name, got[i].id, got[i].item, want[i].name, want[i].id, want[i].item)
			}
		}
	}
}
