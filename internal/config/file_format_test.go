package config

// The enums of the file format's jsonschema tags (which the schema and the
// reference are generated from) against the lists the validators check
// values with, so a value added to one and not the other fails here.

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/plugins"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/policy"
	"github.com/mcpgw/gateway/router/upstream"
)

func TestEnumTagsMatchTheValidators(t *testing.T) {
	modes := make([]string, len(router.SessionModes))
	for i, m := range router.SessionModes {
		modes[i] = string(m)
	}
	want := map[string][]string{
		"rawAuth.Mode":       {ModeJWT, ModeNone},
		"rawJWT.Algorithms":  allAlgorithms,
		"rawBackend.Session": modes,
		"rawBackend.Transport": {string(upstream.TransportStreamableHTTP), string(upstream.TransportSSE),
			string(upstream.TransportStdio)},
		"rawAudit.Arguments": {AuditArgumentsHash, AuditArgumentsNone, AuditArgumentsFull},
		"rawPlugin.Type": {plugins.TypeValidateArguments, plugins.TypeDenyPattern, plugins.TypeRedact,
			plugins.TypeMaxResultBytes},
		"rawPlugin.In":                   {plugins.InArguments, plugins.InResult, plugins.InBoth},
		"rawPlugin.Builtin":              {"secrets", "email"},
		"rawRateLimit.Per":               {policy.RatePerPrincipal, policy.RatePerPrincipalTool, policy.RatePerVHost},
		"rawTokenGrant.SubjectTokenType": {"access_token", "jwt"},
		"rawUserOAuth.TokenEndpointAuth": {credentials.AuthClientSecretBasic, credentials.AuthClientSecretPost},
		"rawIcon.Theme":                  {"light", "dark"},
	}
	got := map[string][]string{}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			for _, kw := range strings.Split(f.Tag.Get("jsonschema"), ",") {
				if v, ok := strings.CutPrefix(kw, "enum="); ok {
					k := t.Name() + "." + f.Name
					got[k] = append(got[k], v)
				}
			}
			walk(f.Type)
		}
	}
	walk(rawConfigType)
	for k, w := range want {
		g := got[k]
		if !sameSet(g, w) {
			t.Errorf("%s: jsonschema enum %v, the validator takes %v", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s has a jsonschema enum this test does not check: add its validator's list", k)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
