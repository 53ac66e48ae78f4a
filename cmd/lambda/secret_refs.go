package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Prefixes of an environment value that refers to a secret instead of
// holding it. A Lambda function's environment variables are plain text to
// anyone who may read its configuration (console, GetFunctionConfiguration),
// and a CloudFormation {{resolve:...}} reference is resolved at deploy time
// into exactly such a variable. A reference is resolved by the function
// itself, once per cold start, so the secret lives only in Secrets Manager
// or Parameter Store and in the process's memory:
//
//	MCPGW_REDIS_URL=aws-secretsmanager:mcpgw/redis-url   the secret's SecretString
//	MCPGW_JWT_SECRET=aws-secretsmanager:mcpgw/app:SecretString:jwt
//	                                                     one key of a SecretString holding a JSON object
//	MCPGW_REDIS_URL=aws-ssm:/mcpgw/redis-url             the parameter's value, decrypted (SecureString)
//
// The secret id may be a name or an ARN; the :SecretString:<json-key>
// suffix is CloudFormation's dynamic-reference form, so a value written for
// {{resolve:secretsmanager:...}} means the same here (version stages and
// ids are not taken: the function reads the current version).
//
// Any variable may hold one (MCPGW_JWT_SECRET, a backend token named in
// add_headers, ...). The function's role needs secretsmanager:GetSecretValue
// or ssm:GetParameter on it (and kms:Decrypt for a customer-managed key).
const (
	refSecretsManager = "aws-secretsmanager:"
	refSSM            = "aws-ssm:"

	// jsonKeySep introduces the key of a JSON SecretString to read.
	jsonKeySep = ":SecretString:"
)

// secretResolveTimeout bounds fetching every referenced secret at init.
const secretResolveTimeout = 10 * time.Second

// secretSource fetches one referenced value: kind is refSecretsManager or
// refSSM, id the secret id or parameter name.
type secretSource func(ctx context.Context, kind, id string) (string, error)

// secretRefs lists the environment variables whose value is a reference,
// by name: value.
func secretRefs(environ []string) map[string]string {
	refs := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(value, refSecretsManager) || strings.HasPrefix(value, refSSM) {
			refs[name] = value
		}
	}
	return refs
}

// resolveSecretRefs fetches every reference in refs and returns the values,
// by variable name. An error names the variable and the reference, never a
// value.
func resolveSecretRefs(ctx context.Context, refs map[string]string, fetch secretSource) (map[string]string, error) {
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]string, len(refs))
	for _, name := range names {
		ref := refs[name]
		kind, id := refSSM, strings.TrimPrefix(ref, refSSM)
		if rest, ok := strings.CutPrefix(ref, refSecretsManager); ok {
			kind, id = refSecretsManager, rest
		}
		jsonKey := ""
		if kind == refSecretsManager {
			if i := strings.LastIndex(id, jsonKeySep); i >= 0 {
				id, jsonKey = id[:i], id[i+len(jsonKeySep):]
				if jsonKey == "" || strings.Contains(jsonKey, ":") {
					return nil, fmt.Errorf("%s: %q: want %s<json-key> (version stages and ids are not supported)", name, ref, jsonKeySep)
				}
			}
		}
		if strings.TrimSpace(id) == "" {
			return nil, fmt.Errorf("%s: %q names no secret", name, ref)
		}
		v, err := fetch(ctx, kind, id)
		if err != nil {
			return nil, fmt.Errorf("%s: resolving %s: %w", name, ref, err)
		}
		if jsonKey != "" {
			if v, err = jsonField(v, jsonKey); err != nil {
				return nil, fmt.Errorf("%s: resolving %s: %w", name, ref, err)
			}
		}
		out[name] = v
	}
	return out, nil
}

// jsonField reads key of a SecretString holding a JSON object: a string
// as it is, any other JSON value as its JSON text (as CloudFormation
// resolves it). An error never quotes the secret.
func jsonField(secret, key string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(secret), &obj); err != nil || obj == nil {
		return "", errors.New("the secret's SecretString is not a JSON object, so it has no keys")
	}
	raw, ok := obj[key]
	if !ok {
		return "", fmt.Errorf("the secret's JSON has no key %q", key)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	return string(raw), nil
}

// resolveSecretEnv replaces, in this process's environment, every
// reference by the secret's value, before anything reads the environment
// (the config reads hs_secret_env and ${ENV} through os.Getenv). It runs
// once, at init; with no reference it does nothing and touches no network.
func resolveSecretEnv() error {
	refs := secretRefs(os.Environ())
	if len(refs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretResolveTimeout)
	defer cancel()
	fetch, err := awsSecretSource(ctx)
	if err != nil {
		return err
	}
	values, err := resolveSecretRefs(ctx, refs, fetch)
	if err != nil {
		return err
	}
	for name, v := range values {
		if err := os.Setenv(name, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// awsSecretSource fetches from Secrets Manager and Parameter Store with the
// function's own credentials (the AWS SDK's default chain: on Lambda, the
// execution role). AWS_ENDPOINT_URL and the per-service variables are
// honoured, as everywhere in the SDK.
func awsSecretSource(ctx context.Context) (secretSource, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS SDK configuration: %w", err)
	}
	var sm *secretsmanager.Client
	var ps *ssm.Client
	return func(ctx context.Context, kind, id string) (string, error) {
		switch kind {
		case refSecretsManager:
			if sm == nil {
				sm = secretsmanager.NewFromConfig(cfg)
			}
			out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
			if err != nil {
				return "", err
			}
			if out.SecretString == nil {
				return "", errors.New("the secret has no SecretString (binary secrets are not supported)")
			}
			return *out.SecretString, nil
		default:
			if ps == nil {
				ps = ssm.NewFromConfig(cfg)
			}
			out, err := ps.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(id), WithDecryption: aws.Bool(true)})
			if err != nil {
				return "", err
			}
			if out.Parameter == nil || out.Parameter.Value == nil {
				return "", errors.New("the parameter has no value")
			}
			return *out.Parameter.Value, nil
		}
	}, nil
}
