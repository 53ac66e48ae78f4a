package tests

// --admin-listen: the operator endpoints on a port of their own, and none
// of them on the MCP port (issue 40).

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// operatorPaths are what the admin listener serves; with it set, the MCP
// port must answer 404 to each.
var operatorPaths = []string{"/healthz", "/readyz", "/metrics", "/status", "/debug/pprof/cmdline"}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCLI_AdminListenMovesOperatorEndpointsOffTheMCPPort(t *testing.T) {
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")

	// Without it, the MCP port serves the probes, metrics and status
	// (what the admin listener takes away), and never the profiles.
	plain := testsupport.StartGateway(t, bin, []string{"--demo"}, nil)
	for _, p := range operatorPaths[:4] {
		if code, _ := httpGet(t, plain.URL+p); code != http.StatusOK {
			t.Fatalf("without --admin-listen, GET %s on the MCP port: %d, want 200", p, code)
		}
	}

	admin := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	gw := testsupport.StartGateway(t, bin, []string{"--demo", "--admin-listen", admin},
		[]string{"MCPGW_ADMIN_PROFILES=true"})
	for _, p := range operatorPaths {
		if code, body := httpGet(t, "http://"+admin+p); code != http.StatusOK {
			t.Errorf("admin listener GET %s: %d %q, want 200", p, code, body)
		}
		if code, _ := httpGet(t, gw.URL+p); code != http.StatusNotFound {
			t.Errorf("MCP port GET %s with --admin-listen: %d, want 404", p, code)
		}
	}
	if _, body := httpGet(t, "http://"+admin+"/metrics"); !strings.Contains(body, "mcpgw_build_info") {
		t.Errorf("admin /metrics lacks mcpgw_build_info:\n%.400s", body)
	}
	// The MCP endpoint itself is where it was, and counted on the
	// admin port's /metrics.
	c := &testsupport.Client{T: t}
	ep := testsupport.BaseURL(gw.URL)
	c.Initialize(ep, nil)
	if r := c.Post(ep, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "gateway-one-increment") {
		t.Fatalf("tools/list through the MCP port with --admin-listen: %d %s", r.Status, r.Body)
	}
	if _, body := httpGet(t, "http://"+admin+"/metrics"); !strings.Contains(body, `vhost="demo"`) {
		t.Errorf("admin /metrics does not count the MCP port's requests:\n%.600s", body)
	}
	if !strings.Contains(gw.Output(), "admin listener started") {
		t.Errorf("no start line for the admin listener:\n%s", gw.Output())
	}

	// A taken address stops start-up with the flag named; profiles
	// without an admin listener are refused rather than put on the MCP
	// port; a malformed switch is named.
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--demo", "--listen", "127.0.0.1:0", "--admin-listen", admin}, "--admin-listen"},
		{nil, []string{"--demo", "--admin-profiles"}, "--admin-profiles needs --admin-listen"},
		{[]string{"MCPGW_ADMIN_PROFILES=maybe"}, []string{"--demo"}, `MCPGW_ADMIN_PROFILES="maybe"`},
	} {
		_, stderr, code := runBinary(t, bin, tc.env, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q, want 1 naming %q", tc.env, tc.args, code, stderr, tc.want)
		}
	}
}
