package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/router/policy"
)

// withAccess builds a config whose vhost "demo" has the given access block
// (indented under "access:") and two backends.
func withAccess(access string) string {
	return "auth:\n  mode: none\nvirtual_hosts:\n  demo:\n    access:\n" + indent(access, "      ") +
		"    backends:\n      gateway-one:\n        url: http://127.0.0.1:9001/mcp\n      gateway-two:\n        url: http://127.0.0.1:9002/mcp\n"
}

func TestConfig_AccessRulesAreCompiled(t *testing.T) {
	cfg := mustParse(t, withAccess(`
- when: "'admins' in claims.groups"
  allow: ["*"]
- allow: ["gateway-one-*", "Public.Tool", "gateway-two-test://*"]
  deny: ["gateway-one-delete_*"]
`))
	p := cfg.VirtualHosts["demo"].Access
	want := []policy.AccessRule{
		{When: "'admins' in claims.groups", Allow: []string{"*"}},
		{Allow: []string{"gateway-one-*", "Public.Tool", "gateway-two-test://*"}, Deny: []string{"gateway-one-delete_*"}},
	}
	if p == nil || !reflect.DeepEqual(p.Rules(), want) {
		t.Fatalf("rules = %+v, want %+v", p.Rules(), want)
	}
	if !p.DependsOnClaims() {
		t.Fatal("a rule reads claims, but the policy does not depend on them")
	}
}

func TestConfig_AccessAbsentNullOrEmpty(t *testing.T) {
	if p := mustParse(t, minimal).VirtualHosts["demo"].Access; p != nil {
		t.Fatalf("no access field gave a policy: %+v", p.Rules())
	}
	null := strings.Replace(minimal, "  demo:\n", "  demo:\n    access:\n", 1)
	if p := mustParse(t, null).VirtualHosts["demo"].Access; p != nil {
		t.Fatalf("access: (null) gave a policy: %+v", p.Rules())
	}
	// Set but empty: deny by default, so nothing is visible.
	empty := strings.Replace(minimal, "  demo:\n", "  demo:\n    access: []\n", 1)
	if p := mustParse(t, empty).VirtualHosts["demo"].Access; p == nil || len(p.Rules()) != 0 {
		t.Fatalf("access: [] did not give an empty policy")
	}
}

// Each problem names the file, the rule's field path and its line.
func TestConfig_AccessErrorsNameTheRule(t *testing.T) {
	for _, tc := range []struct {
		name, access string
		want         []string
	}{
		{"CEL syntax", `
- when: "true"
  allow: ["*"]
- when: "claims.groups.exists(g, g =="
  allow: ["*"]
`, []string{"virtual_hosts.demo.access[1].when: invalid CEL expression", "(line 8)"}},
		{"undeclared name", `
- when: "user.admin == true"
  allow: ["*"]
`, []string{"virtual_hosts.demo.access[0].when:", "undeclared reference to 'user'", "(line 6)"}},
		{"not boolean", `
- when: "claims.sub"
  allow: ["*"]
`, []string{"virtual_hosts.demo.access[0].when: must be a boolean CEL expression"}},
		{"empty pattern", `
- allow: ["gateway-one-*",
          ""]
`, []string{`virtual_hosts.demo.access[0].allow[1]: empty pattern`, "(line 7)"}},
		{"deny without allow", `
- when: "true"
  deny: ["x"]
- allow: ["*"]
`, []string{"virtual_hosts.demo.access[0].deny: has no effect without allow", "(line 7)"}},
		{"unreachable rule", `
- allow: ["*"]
- when: "true"
  allow: ["x"]
`, []string{"virtual_hosts.demo.access[1]: can never apply", "(line 7)"}},
		{"unknown field", `
- when: "true"
  allowed: ["*"]
`, []string{"virtual_hosts.demo.access[0].allowed: unknown field (valid fields: when, allow, deny, scopes)"}},
		{"not a list", `
  when: "true"
`, []string{"virtual_hosts.demo.access: must be a list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, withAccess(tc.access), tc.want...)
		})
	}
}

// The access guide's example is a config the gateway takes, and its
// rules mean what the guide says.
func TestConfig_GuideAccessExampleParses(t *testing.T) {
	readme, err := os.ReadFile("../../docs/guide/access-and-limits.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Access by identity\n")
	if !ok {
		t.Fatal("the access guide has no access section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the guide's access section has no yaml example")
	}
	cfg := mustParse(t, "auth: {mode: none}\n"+block)
	p := cfg.VirtualHosts["demo"].Access
	if p == nil || len(p.Rules()) != 3 || !p.DependsOnClaims() {
		t.Fatalf("guide example rules: %+v", p.Rules())
	}
}
