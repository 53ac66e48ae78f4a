package handler_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// initialize shows a caller only the backends its access rules let it see
// something of: the claims reach the router with the request (the same
// rules decide lists and calls). Carol matches no rule of vhost demo.
func TestAccess_InitializeShowsOnlyTheCallersBackends(t *testing.T) {
	g := startGateway(t, gwOptions{policy: true})
	for _, tc := range []struct {
		sub  string
		want bool // both backends' instructions
	}{{"alice", true}, {"carol", false}} {
		r := g.do(req{body: initBody, sub: tc.sub})
		if r.status != http.StatusOK || r.rpc.Error != nil {
			t.Fatalf("%s: initialize %d %s", tc.sub, r.status, r.body)
		}
		var res struct {
			Instructions string         `json:"instructions"`
			Capabilities map[string]any `json:"capabilities"`
		}
		if err := json.Unmarshal(r.rpc.Result, &res); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"## gateway-one", "## gateway-two"} {
			if got := strings.Contains(res.Instructions, key); got != tc.want {
				t.Errorf("%s: instructions %q hold %s: %v, want %v", tc.sub, res.Instructions, key, got, tc.want)
			}
		}
		if _, tools := res.Capabilities["tools"]; tools != tc.want {
			t.Errorf("%s: capabilities %v", tc.sub, res.Capabilities)
		}
	}
}
