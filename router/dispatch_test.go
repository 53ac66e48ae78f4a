package router

import (
	"slices"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
)

// TestDispatch_EveryMethodOfTheTable: every method of wire's table has a
// row in the router's (methods.go), every row a method of wire's, and the
// row agrees with wire's facts (a routed method is one wire says targets a
// backend; a list is one that does not; the gateway answers a method for
// one generation). A method added to either table without its row in the
// other fails here, not in a client's request.
func TestDispatch_EveryMethodOfTheTable(t *testing.T) {
	names := wire.MethodNames()
	for _, m := range names {
		row := rowOf(m)
		if row.Method != wire.MethodOf(m) {
			t.Errorf("%s: the router's row does not carry wire's facts", m)
		}
		switch row.serving {
		case notServed:
			t.Errorf("%s is in wire's method table but the router does not dispatch it", m)
		case byGateway:
			if row.answer == nil {
				t.Errorf("%s is the gateway's to answer, but its row has no answer", m)
			}
			if row.Session == row.Modern {
				t.Errorf("%s: the gateway answers it in serve (Session) or in handleModern (Modern), not both or neither", m)
			}
		case routed:
			if row.Routed == "" {
				t.Errorf("%s is routed, but wire's row names no identifier kind", m)
			}
			if row.routeOn == "" {
				t.Errorf("%s is routed, but its row names no field to route on", m)
			}
		case fanOut:
			if row.Routed != "" || row.Task {
				t.Errorf("%s fans out, but wire's row says it targets one backend", m)
			}
			if row.list.Method != m || row.list.Field == "" || row.list.Capability == "" {
				t.Errorf("%s fans out, but its list operation is %+v", m, row.list)
			}
		case taskMethod:
			if !row.Task {
				t.Errorf("%s is dispatched as a task method, but wire's row is not a Task's", m)
			}
		}
		if row.Routed != "" && row.serving != routed {
			t.Errorf("%s: wire's row names an identifier kind, but the router does not route it", m)
		}
	}
	for m := range methodRows {
		if !slices.Contains(names, m) {
			t.Errorf("%s has a router row but no row in wire's method table", m)
		}
	}
	for _, m := range []string{"tools/made-up", "notifications/initialized", ""} {
		if got := rowOf(m).serving; got != notServed {
			t.Errorf("%s dispatches as %d", m, got)
		}
	}
}

// TestMethodRows_Facts: what each layer asks of a method, as the rows say
// it (a fact moved to the wrong row changes who is counted, refused or
// renamed).
func TestMethodRows_Facts(t *testing.T) {
	cases := []struct {
		method  string
		serving serving
		kind    string // routed: the identifier kind
		routeOn string
		check   func(*methodRow) bool
	}{
		{"ping", byGateway, "", "", func(r *methodRow) bool { return r.Session }},
		{"initialize", byGateway, "", "", func(r *methodRow) bool { return r.Session }},
		{"logging/setLevel", byGateway, "", "", func(r *methodRow) bool { return r.Session }},
		{"server/discover", byGateway, "", "", func(r *methodRow) bool { return r.Modern }},
		{"subscriptions/listen", byGateway, "", "", func(r *methodRow) bool { return r.Modern }},
		{"tools/list", fanOut, "", "", func(r *methodRow) bool { return r.list.Field == "tools" && r.list.URIField == "" }},
		{"resources/list", fanOut, "", "", func(r *methodRow) bool { return r.list.URIField == "uri" }},
		{"resources/templates/list", fanOut, "", "", func(r *methodRow) bool {
			return r.list.Field == "resourceTemplates" && r.list.Capability == "resources" && r.list.URIField == "uriTemplate"
		}},
		{"prompts/list", fanOut, "", "", nil},
		{"skills/list", fanOut, "", "", func(r *methodRow) bool { return r.list.URIField == "uri" }},
		{"tools/call", routed, "tool", "name", func(r *methodRow) bool {
			return r.Tool && r.RateLimited && r.resolveBy != nil
		}},
		{"prompts/get", routed, "prompt", "name", nil},
		{"resources/read", routed, "resource", "uri", nil},
		{"resources/subscribe", routed, "resource", "uri", func(r *methodRow) bool { return r.Subscription == wire.Subscribes }},
		{"resources/unsubscribe", routed, "resource", "uri", func(r *methodRow) bool { return r.Subscription == wire.Unsubscribes }},
		{"completion/complete", routed, "reference", "ref", func(r *methodRow) bool { return r.resolveBy != nil }},
		{"skills/get", routed, "skill", "uri", func(r *methodRow) bool { return r.skills && !r.directory }},
		{"resources/directory/read", routed, "resource", "uri", func(r *methodRow) bool { return r.skills && r.directory }},
		{"tasks/get", taskMethod, "", "", nil},
		{"tasks/update", taskMethod, "", "", nil},
		{"tasks/cancel", taskMethod, "", "", nil},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		seen[tc.method] = true
		row := rowOf(tc.method)
		if row.serving != tc.serving || row.Routed != tc.kind || row.routeOn != tc.routeOn {
			t.Errorf("%s: serving %d, kind %q, routed on %q; want %d, %q, %q", tc.method, row.serving, row.Routed, row.routeOn, tc.serving, tc.kind, tc.routeOn)
		}
		if tc.check != nil && !tc.check(row) {
			t.Errorf("%s: its row's facts are not the method's: %+v", tc.method, *row)
		}
		// Facts only tools/call has.
		if tc.method != "tools/call" && (row.Tool || row.RateLimited || row.resolveBy != nil && row.Routed != "reference") {
			t.Errorf("%s: its row says it names a tool, is rate limited or resolves as one", tc.method)
		}
	}
	for m := range methodRows {
		if !seen[m] {
			t.Errorf("%s has a row but no case here", m)
		}
	}
	if len(listOps) != 5 || listOps["tools/list"] != rowOf("tools/list").list {
		t.Errorf("listOps are not the fan-out rows' operations: %v", listOps)
	}
}
