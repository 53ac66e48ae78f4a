package router

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/upstream"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Acknowledging a listen is linear in its size: one step per URI each
// backend acknowledged, whatever the number of URIs (a scan per URI made
// 100,000 URIs cost 15 s of CPU). Counted in steps, not seconds.
func TestListen_AcknowledgingIsLinear(t *testing.T) {
	table := newRoutingTable(map[string]*VirtualHost{"demo": {Name: "demo", Backends: map[string]*Backend{
		"one": {Config: upstream.Config{URL: "http://127.0.0.1:1/mcp"}}, "two": {Config: upstream.Config{URL: "http://127.0.0.1:2/mcp"}}}}})
	t.Cleanup(table.close)
	v := table.vhosts["demo"]
	for _, n := range []int{100, 1000, 10000} {
		ls := &listenSession{v: v}
		uris := func(k string) []string {
			out := make([]string, n/2)
			for i := range out {
				out[i] = fmt.Sprintf("file:///%s/%d", k, i)
			}
			return out
		}
		for _, k := range []string{"one", "two"} {
			ls.acknowledged(k, listenFilter{ResourceSubscriptions: uris(k)})
			ls.acknowledged(k, listenFilter{ResourceSubscriptions: uris(k)[:n/4]}) // a reconnect's repeat
		}
		if got := len(ls.agreed.ResourceSubscriptions); got != n {
			t.Fatalf("n=%d: %d URIs agreed, want each once", n, got)
		}
		if want := n + n/2; ls.steps != want {
			t.Fatalf("n=%d: %d steps to acknowledge, want %d (one per URI acknowledged)", n, ls.steps, want)
		}
	}
}

func TestListen_FilterBounds(t *testing.T) {
	r := New(nil, Options{ListenURIs: 3})
	id, _ := jsonrpc.MakeID("l")
	long := "file:///" + string(make([]byte, 1100))
	for name, c := range map[string]struct {
		uris   []string
		status int    // 0: admitted
		kept   int    // when admitted
		want   string // in the message
	}{
		"at the bound":          {uris: []string{"a", "b", "c"}, kept: 3},
		"duplicates count once": {uris: []string{"a", "b", "a", "c", "b", "c"}, kept: 3},
		"over the bound":        {uris: []string{"a", "b", "c", "d"}, status: http.StatusBadRequest, want: "limits.listen_uris"},
		"a URI too long":        {uris: []string{"a", long}, status: http.StatusBadRequest, want: "longer than 1024 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			f := &listenFilter{ResourceSubscriptions: c.uris}
			resp := r.checkListenFilter(id, f)
			if c.status == 0 {
				if resp != nil || len(f.ResourceSubscriptions) != c.kept {
					t.Fatalf("refused %+v or kept %v, want %d URIs admitted", resp, f.ResourceSubscriptions, c.kept)
				}
				return
			}
			status, _, ok := Refusal(resp)
			e := rpcErrOf(resp)
			if !ok || status != c.status || e == nil || e.Code != CodeInvalidParams || !strings.Contains(e.Message, c.want) {
				t.Fatalf("answered %v %+v, want %d -32602 naming %q", status, resp.Error, c.status, c.want)
			}
		})
	}
}

func TestListen_SlotsPerPrincipal(t *testing.T) {
	ls := listenSlots{limit: 2}
	for i, want := range []bool{true, true, false} {
		if got := ls.take("alice"); got != want {
			t.Fatalf("alice's listen %d admitted %v, want %v (two of them, then refused)", i+1, got, want)
		}
	}
	if !ls.take("bob") {
		t.Fatal("bob refused by alice's listens")
	}
	ls.give("alice")
	if !ls.take("alice") {
		t.Fatal("a closed listen's place was not freed")
	}
	ls.give("alice")
	ls.give("alice")
	ls.give("bob")
	if len(ls.open) != 0 {
		t.Fatalf("counts left after every listen closed: %v", ls.open)
	}
}

// offlineVHost is vhost "v" of backends keys, each at a URL nothing
// answers: for the router's own work on a vhost (routing, renaming,
// sealing), which never reaches a backend.
func offlineVHost(t testing.TB, keys ...string) *vhost {
	t.Helper()
	backends := make(map[string]*Backend, len(keys))
	for i, k := range keys {
		backends[k] = &Backend{Config: upstream.Config{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", i+1)}}
	}
	table := newRoutingTable(map[string]*VirtualHost{"v": {Name: "v", Backends: backends}})
	t.Cleanup(table.close)
	return table.vhosts["v"]
}
