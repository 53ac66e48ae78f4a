package tests

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// The gateway binary serves GET /status beside /metrics: after a session
// opened, every backend of the vhost shows its protocol and discovery.
func TestStatus_ServedByTheGatewayProcess(t *testing.T) {
	c := newCluster(t)
	gw := c.start()
	ep := testsupport.BaseURL(gw.URL)
	c.client("alice").Initialize(ep, nil)
	res, err := http.Get(gw.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		VHosts []struct {
			Name     string `json:"name"`
			Backends []struct {
				Key             string          `json:"key"`
				State           string          `json:"state"`
				ProtocolVersion string          `json:"protocol_version"`
				LastDiscovery   json.RawMessage `json:"last_discovery"`
			} `json:"backends"`
		} `json:"vhosts"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /status: %d %v", res.StatusCode, err)
	}
	if len(doc.VHosts) != 1 || doc.VHosts[0].Name != "demo" || len(doc.VHosts[0].Backends) != 2 {
		t.Fatalf("status %+v", doc)
	}
	for _, b := range doc.VHosts[0].Backends {
		if b.State != "ok" || b.ProtocolVersion == "" || len(b.LastDiscovery) == 0 {
			t.Errorf("backend %s after initialize: %+v", b.Key, b)
		}
	}
}
