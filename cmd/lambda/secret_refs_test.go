package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// fakeAWS answers the two AWS calls the function makes at cold start,
// Secrets Manager's GetSecretValue and Parameter Store's GetParameter, in
// the AWS JSON 1.1 protocol the SDK speaks, from fixed tables. It is a
// real HTTP server reached through the SDK's AWS_ENDPOINT_URL.
type fakeAWS struct {
	*httptest.Server
	secrets, params map[string]string

	mu    sync.Mutex
	calls []string // "<target> <id>"
}

func startFakeAWS(t *testing.T, secrets, params map[string]string) *fakeAWS {
	t.Helper()
	f := &fakeAWS{secrets: secrets, params: params}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SecretID       string `json:"SecretId"`
		Name           string `json:"Name"`
		WithDecryption bool   `json:"WithDecryption"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	target := r.Header.Get("X-Amz-Target")
	if !strings.Contains(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
		http.Error(w, `{"__type":"MissingAuthenticationTokenException","message":"unsigned"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, target+" "+in.SecretID+in.Name)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	notFound := func() {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ResourceNotFoundException","message":"not found"}`))
	}
	switch target {
	case "secretsmanager.GetSecretValue":
		v, ok := f.secrets[in.SecretID]
		if !ok {
			notFound()
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Name": in.SecretID, "SecretString": v})
	case "AmazonSSM.GetParameter":
		v, ok := f.params[in.Name]
		if !ok || !in.WithDecryption {
			_, _ = w.Write([]byte(`{"__type":"ParameterNotFound","message":"not found"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{"Name": in.Name, "Type": "SecureString", "Value": v}})
	default:
		notFound()
	}
}

// awsTestEnv points the AWS SDK at f with throwaway credentials.
func (f *fakeAWS) env() []string {
	return []string{"AWS_ENDPOINT_URL=" + f.URL, "AWS_REGION=eu-west-1",
		"AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=test-secret-key",
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true"}
}

// References are resolved through the real AWS SDK, each by its service;
// a reference that resolves to nothing names the variable and stops.
func TestSecretRefs_ResolvedThroughTheAWSSDK(t *testing.T) {
	aws := startFakeAWS(t, map[string]string{"mcpgw/redis": "redis://:pw@h:6379"}, map[string]string{"/mcpgw/jwt": "jwt-secret-value"})
	for _, kv := range aws.env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	refs := secretRefs([]string{
		"MCPGW_REDIS_URL=aws-secretsmanager:mcpgw/redis",
		"MCPGW_JWT_SECRET=aws-ssm:/mcpgw/jwt",
		"PLAIN=just-a-value",
		"MCPGW_LOG_LEVEL=debug",
	})
	if len(refs) != 2 {
		t.Fatalf("refs %v", refs)
	}
	fetch, err := awsSecretSource(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := resolveSecretRefs(t.Context(), refs, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if got["MCPGW_REDIS_URL"] != "redis://:pw@h:6379" || got["MCPGW_JWT_SECRET"] != "jwt-secret-value" {
		t.Fatalf("resolved %v", got)
	}

	_, err = resolveSecretRefs(t.Context(), map[string]string{"MCPGW_BACKEND_TOKEN": "aws-secretsmanager:missing"}, fetch)
	if err == nil || !strings.Contains(err.Error(), "MCPGW_BACKEND_TOKEN") || !strings.Contains(err.Error(), "ResourceNotFound") {
		t.Fatalf("missing secret: %v", err)
	}
	_, err = resolveSecretRefs(t.Context(), map[string]string{"X": "aws-ssm:"}, fetch)
	if err == nil || !strings.Contains(err.Error(), "names no secret") {
		t.Fatalf("empty reference: %v", err)
	}
}

// A Secrets Manager reference may name one key of a JSON SecretString,
// in CloudFormation's form (name or ARN, then :SecretString:<key>).
func TestSecretRefs_JSONKeyOfASecret(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mcpgw/app-AbCdEf"
	secrets := map[string]string{
		"mcpgw/app": `{"jwt":"jwt-from-json","port":6379,"nested":{"a":1}}`,
		arn:         `{"jwt":"jwt-from-arn"}`,
		"plain":     "not json at all, secret-ish",
	}
	fetch := func(_ context.Context, kind, id string) (string, error) {
		if v, ok := secrets[id]; ok && kind == refSecretsManager {
			return v, nil
		}
		return "", errors.New("ResourceNotFoundException")
	}
	for _, tc := range []struct {
		name, ref, want, wantErr string
	}{
		{"string value", "aws-secretsmanager:mcpgw/app:SecretString:jwt", "jwt-from-json", ""},
		{"number value as its JSON", "aws-secretsmanager:mcpgw/app:SecretString:port", "6379", ""},
		{"object value as its JSON", "aws-secretsmanager:mcpgw/app:SecretString:nested", `{"a":1}`, ""},
		{"an ARN, whose colons are not the key's", "aws-secretsmanager:" + arn + ":SecretString:jwt", "jwt-from-arn", ""},
		{"no such key", "aws-secretsmanager:mcpgw/app:SecretString:nope", "", `has no key "nope"`},
		{"not a JSON object", "aws-secretsmanager:plain:SecretString:jwt", "", "not a JSON object"},
		{"empty key", "aws-secretsmanager:mcpgw/app:SecretString:", "", "want :SecretString:<json-key>"},
		{"a version stage", "aws-secretsmanager:mcpgw/app:SecretString:jwt:AWSCURRENT", "", "version stages"},
		{"no secret before the key", "aws-secretsmanager::SecretString:jwt", "", "names no secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSecretRefs(t.Context(), map[string]string{"V": tc.ref}, fetch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "V: ") {
					t.Fatalf("err %v, want one naming V and saying %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret-ish") || strings.Contains(err.Error(), "jwt-from") {
					t.Fatalf("the error quotes the secret: %v", err)
				}
				return
			}
			if err != nil || got["V"] != tc.want {
				t.Fatalf("got %q, %v; want %q", got["V"], err, tc.want)
			}
		})
	}
}

func TestSecretRefs_ErrorsNeverHoldAValue(t *testing.T) {
	fetch := func(context.Context, string, string) (string, error) { return "", errors.New("AccessDenied") }
	_, err := resolveSecretRefs(context.Background(), map[string]string{"MCPGW_REDIS_URL": "aws-secretsmanager:mcpgw/redis"}, fetch)
	if err == nil || err.Error() != "MCPGW_REDIS_URL: resolving aws-secretsmanager:mcpgw/redis: AccessDenied" {
		t.Fatalf("got %v", err)
	}
}

// At cold start the function resolves its Redis URL (with the password)
// from Secrets Manager and its JWT secret from Parameter Store, so neither
// is in its environment, and then serves sessions on that Redis.
func TestInit_ResolvesSecretReferencesAtColdStart(t *testing.T) {
	t.Parallel()
	locked, err := testsupport.StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locked.Stop)
	const redisPassword = "redis-password-only-in-secrets-manager"
	if err := locked.Client().ConfigSet(t.Context(), "requirepass", redisPassword).Err(); err != nil {
		t.Fatal(err)
	}
	aws := startFakeAWS(t,
		map[string]string{"mcpgw/redis-url": "redis://:" + redisPassword + "@" + locked.Addr},
		map[string]string{"/mcpgw/jwt-secret": string(jwtSecret)})
	f := newFixture(t)
	env := []string{backendTokenEnv + "=" + backendToken, envConfigYAML + "=" + f.configYAML, envMode + "=url",
		envRedisURL + "=aws-secretsmanager:mcpgw/redis-url", jwtSecretEnv + "=aws-ssm:/mcpgw/jwt-secret"}
	rie := startRIE(t, append(env, aws.env()...)...)
	ep := &functionURL{rie: rie, domain: functionURLDomain}

	c := f.client(t, "alice")
	c.Initialize(ep, nil)
	if tools := c.Call(ep, "tools/list", nil).ToolNames(); len(tools) == 0 {
		t.Fatal("no tools")
	}
	n, err := locked.Client().DBSize(t.Context()).Result()
	if err != nil || n == 0 {
		t.Fatalf("the session is not in the Redis named by the secret: %d keys, %v", n, err)
	}
	aws.mu.Lock()
	calls := strings.Join(aws.calls, "\n")
	aws.mu.Unlock()
	if !strings.Contains(calls, "secretsmanager.GetSecretValue mcpgw/redis-url") || !strings.Contains(calls, "AmazonSSM.GetParameter /mcpgw/jwt-secret") {
		t.Fatalf("AWS calls:\n%s", calls)
	}
	if strings.Contains(rie.Output(), redisPassword) {
		t.Fatalf("the Redis password reached the log:\n%s", rie.Output())
	}
}
