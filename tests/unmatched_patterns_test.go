package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Patterns that match nothing are reported (router/pattern_watch.go): a
// misspelt deny hides nothing, so the log and /status name it once the
// backends listed; a correct one is not named; a reload that fixes it
// takes it off /status, and a typo the reload kept is not logged again.

// patternsConfig is the demo vhost with one access rule whose denies are
// given, and one rate limit narrowed to rateTools.
func (c *cluster) patternsConfig(deny, rateTools string) string {
	return fmt.Sprintf(`%s  demo:
    access:
      - allow: ["*"]
        deny: %s
    rate_limits:
      - per: principal
        tools: %s
        limit: 100
        window: 1m
    backends:
      gateway-one:
        url: %s
      gateway-two:
        url: %s
`, configHead(), deny, rateTools, c.backends["gateway-one"].URL, c.backends["gateway-two"].URL)
}

// statusPatterns is a vhost's "patterns" member of GET /status.
type statusPatterns struct {
	CheckedAt struct {
		At time.Time `json:"at"`
	} `json:"checked_at"`
	Complete  bool `json:"complete"`
	Unmatched []struct {
		Field, Kind, Pattern string
	} `json:"unmatched"`
}

func patternsOf(t *testing.T, base string) *statusPatterns {
	t.Helper()
	res, err := http.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		VHosts []struct {
			Name     string          `json:"name"`
			Patterns *statusPatterns `json:"patterns"`
		} `json:"vhosts"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, v := range doc.VHosts {
		if v.Name == "demo" {
			return v.Patterns
		}
	}
	return nil
}

func (p *statusPatterns) fields() []string {
	var out []string
	for _, u := range p.Unmatched {
		out = append(out, u.Field+"="+u.Pattern)
	}
	return out
}

func TestUnmatchedPatterns_TypoReportedAndFixedByReload(t *testing.T) {
	c := newCluster(t)
	c.writeConfig(c.patternsConfig(`["gateway-one-incremnt", "gateway-two-increment"]`, `["gatway-*"]`))
	g := c.start()

	var first *statusPatterns
	if !testsupport.Eventually(t, 20*time.Second, func() bool {
		first = patternsOf(t, g.URL)
		return first != nil && first.Complete
	}) {
		t.Fatalf("no complete pattern check in /status:\n%s", g.Output())
	}
	want := []string{"virtual_hosts.demo.access[0].deny[0]=gateway-one-incremnt", "virtual_hosts.demo.rate_limits[0].tools[0]=gatway-*"}
	if got := first.fields(); !slices.Equal(got, want) {
		t.Fatalf("/status unmatched %v, want %v", got, want)
	}
	if first.Unmatched[0].Kind != "deny" || first.Unmatched[1].Kind != "rate_limit_tools" {
		t.Fatalf("kinds: %+v", first.Unmatched)
	}
	out := g.Output()
	for _, line := range []string{"field=virtual_hosts.demo.access[0].deny[0] pattern=gateway-one-incremnt", "field=virtual_hosts.demo.rate_limits[0].tools[0] pattern=gatway-*"} {
		if !strings.Contains(out, line) {
			t.Fatalf("the log does not name %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "deny[1]") {
		t.Fatalf("a deny that matches is reported:\n%s", out)
	}

	// The reload fixes the deny and keeps the rate limit's typo.
	c.writeConfig(c.patternsConfig(`["gateway-one-increment", "gateway-two-increment"]`, `["gatway-*"]`))
	g.Signal(sighup)
	var after *statusPatterns
	if !testsupport.Eventually(t, 20*time.Second, func() bool {
		after = patternsOf(t, g.URL)
		return after != nil && after.Complete && after.CheckedAt.At.After(first.CheckedAt.At)
	}) {
		t.Fatalf("no pattern check after the reload:\n%s", g.Output())
	}
	if got := after.fields(); !slices.Equal(got, want[1:]) {
		t.Fatalf("after the reload /status lists %v, want %v", got, want[1:])
	}
	if n := strings.Count(g.Output(), "pattern=gatway-*"); n != 1 {
		t.Fatalf("the kept typo was logged %d times, want once:\n%s", n, g.Output())
	}
}
