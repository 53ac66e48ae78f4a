package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/config"
)

// The SAM template, parsed with its CloudFormation tags: what sam build and
// deploy would act on, checked against what the function needs.

func loadTemplate(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := decodeCFN(data)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	return tpl
}

// at walks maps by key; it fails the test when a key is missing.
func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s is not a mapping", strings.Join(path[:i], "."))
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("template has no %s", strings.Join(path[:i+1], "."))
		}
	}
	return v
}

func want(t *testing.T, what string, got, expected any) {
	t.Helper()
	if !reflect.DeepEqual(got, expected) {
		t.Errorf("%s = %#v, want %#v", what, got, expected)
	}
}

// effective merges Globals.Function into a function's properties the way
// SAM does: mappings merge key by key, anything else the function sets wins.
func effective(t *testing.T, tpl map[string]any, fn string) map[string]any {
	t.Helper()
	globals, _ := at(t, tpl, "Globals", "Function").(map[string]any)
	props, _ := at(t, tpl, "Resources", fn, "Properties").(map[string]any)
	return mergeSAM(globals, props).(map[string]any)
}

func mergeSAM(global, local any) any {
	gm, ok1 := global.(map[string]any)
	lm, ok2 := local.(map[string]any)
	if !ok1 || !ok2 {
		if local != nil {
			return local
		}
		return global
	}
	out := map[string]any{}
	for k, v := range gm {
		out[k] = v
	}
	for k, v := range lm {
		out[k] = mergeSAM(gm[k], v)
	}
	return out
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

func getAtt(res, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{res, attr}}
}

func TestTemplate_GatewayFunction(t *testing.T) {
	tpl := loadTemplate(t)
	want(t, "Transform", tpl["Transform"], "AWS::Serverless-2016-10-31")

	res := at(t, tpl, "Resources", "GatewayFunction").(map[string]any)
	want(t, "GatewayFunction.Type", res["Type"], "AWS::Serverless::Function")
	want(t, "GatewayFunction.Metadata.BuildMethod", at(t, res, "Metadata", "BuildMethod"), "makefile")
	if _, conditional := res["Condition"]; conditional {
		t.Error("GatewayFunction must always exist")
	}
	p := effective(t, tpl, "GatewayFunction")
	want(t, "Runtime", p["Runtime"], "provided.al2023")
	want(t, "Architectures", p["Architectures"], []any{"arm64"})
	want(t, "Handler", p["Handler"], "bootstrap")
	want(t, "CodeUri", p["CodeUri"], ".")
	want(t, "Timeout", p["Timeout"], 900)
	want(t, "FunctionUrlConfig", p["FunctionUrlConfig"], map[string]any{"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"})
	want(t, "LoggingConfig.LogFormat", at(t, p, "LoggingConfig", "LogFormat"), "JSON")

	env := at(t, p, "Environment", "Variables").(map[string]any)
	want(t, "MCPGW_LAMBDA_MODE", env["MCPGW_LAMBDA_MODE"], "url")
	// The store: the created cache over TLS, else a reference to the secret
	// holding the URL (and its password), resolved by the function at cold
	// start: no password in the environment.
	want(t, "MCPGW_REDIS_URL", env["MCPGW_REDIS_URL"], map[string]any{"Fn::If": []any{
		"CreateCache",
		map[string]any{"Fn::Sub": "rediss://${Cache.Endpoint.Address}:${Cache.Endpoint.Port}"},
		map[string]any{"Fn::If": []any{"RedisUrlInSsm",
			map[string]any{"Fn::Sub": refSSM + "${RedisUrlSecretName}"},
			map[string]any{"Fn::Sub": refSecretsManager + "${RedisUrlSecretName}"}}},
	}})
	if _, ok := at(t, tpl, "Parameters").(map[string]any)["RedisUrl"]; ok {
		t.Error("a RedisUrl parameter would put the store's password into a plain environment variable")
	}
	// The config: a bundled file, or inline YAML; never both.
	want(t, "MCPGW_CONFIG", env["MCPGW_CONFIG"], map[string]any{"Fn::If": []any{"HasConfigFile", ref("ConfigFile"), ref("AWS::NoValue")}})
	inline := at(t, env, "MCPGW_CONFIG_YAML", "Fn::If").([]any)
	want(t, "MCPGW_CONFIG_YAML condition", inline[:2], []any{"HasConfigFile", ref("AWS::NoValue")})
	// The JWT secret and the backend token: references the function
	// resolves at cold start, like the store's URL; never a deploy-time
	// {{resolve:...}}, which would put the secret into the environment.
	want(t, "MCPGW_JWT_SECRET", env["MCPGW_JWT_SECRET"], map[string]any{"Fn::If": []any{"HasJwtSecret",
		map[string]any{"Fn::If": []any{"JwtSecretInSsm",
			map[string]any{"Fn::Sub": refSSM + "${JwtSecretName}"},
			map[string]any{"Fn::Sub": refSecretsManager + "${JwtSecretName}"}}},
		ref("AWS::NoValue")}})
	want(t, "MCPGW_BACKEND_TOKEN", env["MCPGW_BACKEND_TOKEN"], map[string]any{"Fn::If": []any{"HasBackendToken",
		map[string]any{"Fn::Sub": refSecretsManager + "${BackendTokenSecretName}"}, ref("AWS::NoValue")}})
	if f := flatten(tpl); strings.Contains(f, "{{resolve:") {
		t.Error("the template resolves a secret at deploy time, into an environment variable")
	}
}

func TestTemplate_HttpAPIAlternative(t *testing.T) {
	tpl := loadTemplate(t)
	res := at(t, tpl, "Resources", "HttpApiFunction").(map[string]any)
	want(t, "HttpApiFunction.Condition", res["Condition"], "WithHttpApi")
	want(t, "HttpApiFunction.Metadata.BuildMethod", at(t, res, "Metadata", "BuildMethod"), "makefile")
	p := effective(t, tpl, "HttpApiFunction")
	want(t, "Runtime", p["Runtime"], "provided.al2023")
	want(t, "Architectures", p["Architectures"], []any{"arm64"})
	env := at(t, p, "Environment", "Variables").(map[string]any)
	want(t, "MCPGW_LAMBDA_MODE", env["MCPGW_LAMBDA_MODE"], "apigw-v2")
	if env["MCPGW_REDIS_URL"] == nil {
		t.Error("HttpApiFunction lacks MCPGW_REDIS_URL: both functions must share the store")
	}
	if p["FunctionUrlConfig"] != nil {
		t.Error("the buffered function must not get a (streaming) Function URL")
	}
	ev := at(t, p, "Events", "Mcp").(map[string]any)
	want(t, "event type", ev["Type"], "HttpApi")
	want(t, "event ApiId", at(t, ev, "Properties", "ApiId"), ref("GatewayHttpApi"))
	want(t, "payload format", at(t, ev, "Properties", "PayloadFormatVersion"), "2.0")
	want(t, "GatewayHttpApi.Condition", at(t, tpl, "Resources", "GatewayHttpApi", "Condition"), "WithHttpApi")
	want(t, "WithHttpApi", at(t, tpl, "Conditions", "WithHttpApi"), map[string]any{"Fn::Equals": []any{ref("EnableHttpApi"), "true"}})
	want(t, "EnableHttpApi default", at(t, tpl, "Parameters", "EnableHttpApi", "Default"), "false")
}

func TestTemplate_CacheAndVPC(t *testing.T) {
	tpl := loadTemplate(t)
	cache := at(t, tpl, "Resources", "Cache").(map[string]any)
	want(t, "Cache.Type", cache["Type"], "AWS::ElastiCache::ServerlessCache")
	want(t, "Cache.Condition", cache["Condition"], "CreateCache")
	want(t, "Engine", at(t, cache, "Properties", "Engine"), "valkey")
	want(t, "Cache.SubnetIds", at(t, cache, "Properties", "SubnetIds"), ref("SubnetIds"))
	want(t, "Cache.SecurityGroupIds", at(t, cache, "Properties", "SecurityGroupIds"), []any{getAtt("CacheSecurityGroup", "GroupId")})
	// Created only when no Redis URL is given (and there is a VPC).
	cc := flatten(at(t, tpl, "Conditions", "CreateCache"))
	if !strings.Contains(cc, `"Fn::Equals":[{"Ref":"RedisUrlSecretName"},""]`) || !strings.Contains(cc, `"Condition":"HasVpc"`) {
		t.Errorf("CreateCache = %s", cc)
	}
	want(t, "RedisUrlSecretName default", at(t, tpl, "Parameters", "RedisUrlSecretName", "Default"), "")
	want(t, "RedisUrlSecretSource values", at(t, tpl, "Parameters", "RedisUrlSecretSource", "AllowedValues"), []any{"secretsmanager", "ssm"})

	// The functions' egress is TCP: nothing they reach needs another protocol.
	for _, e := range at(t, tpl, "Resources", "GatewaySecurityGroup", "Properties", "SecurityGroupEgress").([]any) {
		want(t, "GatewaySecurityGroup egress protocol", e.(map[string]any)["IpProtocol"], "tcp")
	}
	ingress := at(t, tpl, "Resources", "CacheSecurityGroup", "Properties", "SecurityGroupIngress").([]any)[0].(map[string]any)
	want(t, "cache ingress from", ingress["SourceSecurityGroupId"], getAtt("GatewaySecurityGroup", "GroupId"))
	want(t, "cache ingress port", ingress["FromPort"], 6379)

	vpc := at(t, effective(t, tpl, "GatewayFunction"), "VpcConfig", "Fn::If").([]any)
	want(t, "VpcConfig condition", vpc[0], "HasVpc")
	want(t, "VpcConfig.SubnetIds", at(t, vpc[1], "SubnetIds"), ref("SubnetIds"))
	if sg := flatten(at(t, vpc[1], "SecurityGroupIds")); !strings.Contains(sg, `"GatewaySecurityGroup","GroupId"`) || !strings.Contains(sg, `"Ref":"SecurityGroupIds"`) {
		t.Errorf("VpcConfig.SecurityGroupIds = %s", sg)
	}
	want(t, "no VPC", vpc[2], ref("AWS::NoValue"))
	for _, p := range []string{"VpcId", "SubnetIds", "SecurityGroupIds", "JwtIssuer", "JwtAudience", "JwtSecretName", "ConfigFile", "VirtualHosts"} {
		at(t, tpl, "Parameters", p)
	}
}

func TestTemplate_Outputs(t *testing.T) {
	tpl := loadTemplate(t)
	out := at(t, tpl, "Outputs").(map[string]any)
	want(t, "FunctionUrl", at(t, out, "FunctionUrl", "Value"), getAtt("GatewayFunctionUrl", "FunctionUrl"))
	want(t, "McpEndpoint", at(t, out, "McpEndpoint", "Value"), map[string]any{"Fn::Sub": "${GatewayFunctionUrl.FunctionUrl}servers/<vhost>/mcp"})
	want(t, "HttpApiUrl condition", at(t, out, "HttpApiUrl", "Condition"), "WithHttpApi")
	if v := flatten(at(t, out, "HttpApiMcpEndpoint", "Value")); !strings.Contains(v, "${GatewayHttpApi}") || !strings.Contains(v, "/servers/<vhost>/mcp") {
		t.Errorf("HttpApiMcpEndpoint = %s", v)
	}
}

// Every Ref, GetAtt, ${} and condition names something that exists:
// a parameter, a resource (or one SAM generates), a pseudo parameter.
func TestTemplate_ReferencesResolve(t *testing.T) {
	tpl := loadTemplate(t)
	names := map[string]bool{
		"AWS::Region": true, "AWS::StackId": true, "AWS::StackName": true, "AWS::URLSuffix": true,
		"AWS::Partition": true, "AWS::AccountId": true, "AWS::NoValue": true,
		"GatewayFunctionUrl": true, // SAM: FunctionUrlConfig
		// SAM: the execution roles of functions without a Role.
		"GatewayFunctionRole": true, "HttpApiFunctionRole": true,
	}
	for k := range at(t, tpl, "Parameters").(map[string]any) {
		names[k] = true
	}
	for k := range at(t, tpl, "Resources").(map[string]any) {
		names[k] = true
	}
	conds := at(t, tpl, "Conditions").(map[string]any)
	subVar := regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

	var walk func(v any, where string)
	walk = func(v any, where string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch k {
				case "Ref":
					if !names[x.(string)] {
						t.Errorf("%s: Ref to unknown %q", where, x)
					}
				case "Fn::GetAtt":
					if r := x.([]any)[0].(string); !names[r] {
						t.Errorf("%s: GetAtt of unknown %q", where, r)
					}
				case "Condition":
					if s, ok := x.(string); ok && conds[s] == nil {
						t.Errorf("%s: unknown condition %q", where, s)
					}
				case "Fn::If":
					if c := x.([]any)[0].(string); conds[c] == nil {
						t.Errorf("%s: Fn::If on unknown condition %q", where, c)
					}
				case "Fn::Sub":
					s, local := "", map[string]any{}
					switch x := x.(type) {
					case string:
						s = x
					case []any:
						s, local = x[0].(string), x[1].(map[string]any)
					}
					for _, m := range subVar.FindAllStringSubmatch(s, -1) {
						name, _, _ := strings.Cut(m[1], ".")
						if !names[name] && local[name] == nil {
							t.Errorf("%s: ${%s} names nothing", where, m[1])
						}
					}
				}
				walk(x, where+"."+k)
			}
		case []any:
			for _, x := range v {
				walk(x, where)
			}
		}
	}
	for _, section := range []string{"Globals", "Resources", "Outputs", "Conditions", "Rules"} {
		walk(tpl[section], section)
	}
}

// The inline config the template builds from its parameters is a config
// the gateway accepts, and so is the example in VirtualHosts' description.
func TestTemplate_InlineConfigParses(t *testing.T) {
	tpl := loadTemplate(t)
	sub := at(t, effective(t, tpl, "GatewayFunction"), "Environment", "Variables", "MCPGW_CONFIG_YAML", "Fn::If").([]any)[2]
	parts := at(t, sub, "Fn::Sub").([]any)
	text := parts[0].(string)
	desc := at(t, tpl, "Parameters", "VirtualHosts", "Description").(string)
	example := desc[strings.Index(desc, "{"):]

	t.Setenv("MCPGW_JWT_SECRET", "0123456789abcdef0123456789abcdef")
	t.Setenv("MCPGW_BACKEND_TOKEN", "backend-token")
	for _, tc := range []struct {
		name   string
		params map[string]string
		check  func(*config.Config) bool
	}{
		{"jwt, any host", map[string]string{"SessionTtl": "1h", "Hosts": "", "AuthMode": "jwt", "JwtIssuer": "https://issuer.example.com/",
			"JwtAudience": "mcp", "VirtualHosts": example, "JwtKeys": "hs_secret_env: MCPGW_JWT_SECRET", "JwtAudienceClaimLine": "# audience in aud"},
			func(c *config.Config) bool {
				return c.Auth.JWT != nil && c.Auth.JWT.Issuer == "https://issuer.example.com/" && c.Auth.JWT.HMACSecret != nil &&
					len(c.AllowedHosts) == 0 && c.VirtualHosts["demo"] != nil
			}},
		{"jwt from Cognito", map[string]string{"SessionTtl": "1h", "Hosts": "", "AuthMode": "jwt",
			"JwtIssuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC", "JwtAudience": "app-client",
			"VirtualHosts": example, "JwtKeys": "# keys from the issuer's JWK Set", "JwtAudienceClaimLine": "audience_claim: client_id"},
			func(c *config.Config) bool {
				j := c.Auth.JWT
				return j != nil && j.Discover && j.HMACSecret == nil && j.AudienceClaim == "client_id"
			}},
		{"no auth, listed hosts", map[string]string{"SessionTtl": "30m", "Hosts": "abc.lambda-url.eu-west-1.on.aws, mcp.example.com", "AuthMode": "none",
			"JwtIssuer": "", "JwtAudience": "", "VirtualHosts": `{a: {backends: {one: {url: "http://10.0.0.1/mcp"}, two: {url: "http://10.0.0.2/mcp"}}}}`,
			"JwtKeys": "hs_secret_env: MCPGW_JWT_SECRET", "JwtAudienceClaimLine": "# audience in aud"},
			func(c *config.Config) bool {
				return c.Auth.Mode == config.ModeNone && slices.Contains(c.AllowedHosts, "mcp.example.com") && len(c.VirtualHosts["a"].Backends) == 2
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rendered := regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`).ReplaceAllStringFunc(text, func(m string) string {
				v, ok := tc.params[m[2:len(m)-1]]
				if !ok {
					t.Fatalf("no test value for %s", m)
				}
				return v
			})
			cfg, err := config.Parse([]byte(rendered), envConfigYAML)
			if err != nil {
				t.Fatalf("%v\n%s", err, rendered)
			}
			if !tc.check(cfg) {
				t.Errorf("unexpected config from\n%s", rendered)
			}
		})
	}
}

// sam build runs `make build-<LogicalId>` for every makefile-built
// function: the Makefile must have each target.
func TestTemplate_MakefileHasBuildTargets(t *testing.T) {
	tpl := loadTemplate(t)
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, r := range at(t, tpl, "Resources").(map[string]any) {
		if m, _ := r.(map[string]any)["Metadata"].(map[string]any); m["BuildMethod"] == "makefile" {
			n++
			if !regexp.MustCompile(`(?m)^(\S+ )*build-` + name + `( \S+)*\s*:`).Match(mk) {
				t.Errorf("Makefile has no target build-%s", name)
			}
		}
	}
	if n == 0 {
		t.Error("no makefile-built function")
	}
}

// flatten renders a value as compact JSON-like text for substring checks.
func flatten(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"` + k + `":`)
				walk(v[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, x := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				walk(x)
			}
			b.WriteByte(']')
		case string:
			b.WriteString(`"` + v + `"`)
		default:
			fmt.Fprint(&b, v)
		}
	}
	walk(v)
	return b.String()
}

// Each function may read the secret holding the store's URL, and nothing
// else: the action of the chosen service on that one name.
func TestTemplate_FunctionsMayReadTheReferencedSecrets(t *testing.T) {
	tpl := loadTemplate(t)
	for _, fn := range []string{"GatewayFunction", "HttpApiFunction"} {
		policies, ok := at(t, effective(t, tpl, fn), "Policies").([]any)
		if !ok || len(policies) != 1 {
			t.Fatalf("%s Policies = %v", fn, policies)
		}
		want(t, fn+" Policies", policies[0], map[string]any{"Fn::If": []any{"HasAnySecret", ref("SecretsReadPolicy"), ref("AWS::NoValue")}})
	}
	policy := at(t, tpl, "Resources", "SecretsReadPolicy").(map[string]any)
	want(t, "SecretsReadPolicy.Type", policy["Type"], "AWS::IAM::ManagedPolicy")
	want(t, "SecretsReadPolicy.Condition", policy["Condition"], "HasAnySecret")

	// What the policy grants for each way of naming a secret, evaluated as
	// CloudFormation would (conditions, Fn::If, Fn::Sub, Fn::Select/Split).
	const acct = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:"
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   [][2]string // action, resource; in statement order
	}{
		{"nothing referenced: no policy", map[string]string{"RedisUrlSecretName": "", "JwtSecretSource": "none", "JwtSecretName": "", "BackendTokenSecretName": ""}, nil},
		{"store URL in Secrets Manager", map[string]string{"RedisUrlSecretName": "mcpgw/redis", "RedisUrlSecretSource": "secretsmanager", "JwtSecretSource": "none"},
			[][2]string{{"secretsmanager:GetSecretValue", acct + "mcpgw/redis-??????"}}},
		{"store URL and JWT secret in SSM", map[string]string{"RedisUrlSecretName": "/mcpgw/redis", "RedisUrlSecretSource": "ssm", "JwtSecretSource": "ssm", "JwtSecretName": "/mcpgw/jwt"},
			[][2]string{{"ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/mcpgw/redis"}, {"ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/mcpgw/jwt"}}},
		{"SSM names that are not paths", map[string]string{"RedisUrlSecretName": "mcpgw-redis", "RedisUrlSecretSource": "ssm", "JwtSecretSource": "ssm", "JwtSecretName": "mcpgw-jwt"},
			[][2]string{{"ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/mcpgw-redis"}, {"ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/mcpgw-jwt"}}},
		{"JWT secret by name, one JSON key", map[string]string{"JwtSecretSource": "secretsmanager", "JwtSecretName": "mcpgw/app:SecretString:jwt"},
			[][2]string{{"secretsmanager:GetSecretValue", acct + "mcpgw/app-??????"}}},
		{"JWT secret and backend token by ARN", map[string]string{"JwtSecretSource": "secretsmanager", "JwtSecretName": acct + "mcpgw/app-AbCdEf:SecretString:jwt",
			"BackendTokenSecretName": acct + "mcpgw/token-XyZ123"},
			[][2]string{{"secretsmanager:GetSecretValue", acct + "mcpgw/app-AbCdEf*"}, {"secretsmanager:GetSecretValue", acct + "mcpgw/token-XyZ123*"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCFNEval(t, tpl, tc.params)
			if !e.condition("HasAnySecret") {
				if tc.want != nil {
					t.Fatal("HasAnySecret is false: the functions may read nothing")
				}
				return
			}
			var got [][2]string
			for _, st := range at(t, policy, "Properties", "PolicyDocument", "Statement").([]any) {
				v := e.eval(st)
				if v == nil {
					continue // AWS::NoValue
				}
				m := v.(map[string]any)
				got = append(got, [2]string{m["Action"].(string), m["Resource"].(string)})
			}
			want(t, "statements", got, tc.want)
		})
	}
}

// Both functions may invoke GatewayFunction, and only it, to run the
// tasks the gateway runs for backends; HttpApiFunction hands its tasks to
// it (15 minutes, not 30 s).
func TestTemplate_FunctionsMayLaunchTasks(t *testing.T) {
	tpl := loadTemplate(t)
	res := at(t, tpl, "Resources", "TaskInvokePolicy").(map[string]any)
	want(t, "TaskInvokePolicy.Type", res["Type"], "AWS::IAM::Policy")
	if _, conditional := res["Condition"]; conditional {
		t.Error("TaskInvokePolicy must always exist, as GatewayFunction does")
	}
	want(t, "TaskInvokePolicy.Roles", at(t, res, "Properties", "Roles"), []any{ref("GatewayFunctionRole"),
		map[string]any{"Fn::If": []any{"WithHttpApi", ref("HttpApiFunctionRole"), ref("AWS::NoValue")}}})
	want(t, "TaskInvokePolicy statements", at(t, res, "Properties", "PolicyDocument", "Statement"), []any{map[string]any{
		"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": getAtt("GatewayFunction", "Arn")}})
	env := at(t, effective(t, tpl, "HttpApiFunction"), "Environment", "Variables").(map[string]any)
	want(t, envTaskFunction, env[envTaskFunction], ref("GatewayFunction"))
	if v, ok := at(t, effective(t, tpl, "GatewayFunction"), "Environment", "Variables").(map[string]any)[envTaskFunction]; ok {
		t.Errorf("GatewayFunction names a task function (%v): it runs its own", v)
	}
}
