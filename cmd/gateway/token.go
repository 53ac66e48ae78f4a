package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// gateway token lets a newcomer try JWKS authentication end to end in a
// minute, with no identity provider: keygen writes a local key pair and
// its JWK Set, mint signs a test token with it, serve-jwks publishes the
// set (and a minimal OpenID discovery document) on loopback for the
// gateway's auth to point at.
//
// It is built so that it cannot reach production by accident: it never
// reads the gateway's config, nor any environment variable (MCPGW_*
// secrets included: every flag is explicit), serve-jwks refuses any
// address but loopback, mint refuses a lifetime over a day, and every
// token it mints carries the claim mcpgw_test: true, which an operator
// can refuse with an access rule (docs/guide/try-jwks-auth.md). Keys are
// made and used by the standard library, go-jose and golang-jwt.

// Defaults shared by the three commands, so the recipe needs no flags.
const (
	defaultJWKSListen = "127.0.0.1:8081"
	defaultTestIssuer = "http://" + defaultJWKSListen
	testKeyFile       = "key.pem"
	testJWKSFile      = "jwks.json"
	// maxTestTokenTTL bounds a minted token's lifetime: a test token
	// that leaks is worthless by tomorrow.
	maxTestTokenTTL = 24 * time.Hour
	// TestClaim marks every minted token.
	testClaim = "mcpgw_test"
)

const tokenUsage = `Usage:
  gateway token keygen [--out DIR] [--alg ES256|RS256]
  gateway token mint [--key DIR/key.pem] [--iss URL] [--aud AUD] [--sub SUB] [--scope "a b"] [--ttl 1h]
  gateway token serve-jwks [--dir DIR] [--listen 127.0.0.1:8081]

Test tokens for trying JWKS auth locally, with no identity provider. Never reads the
gateway's config or environment; serve-jwks listens on loopback only; minted tokens
live at most 24h and carry "mcpgw_test": true. See docs/guide/try-jwks-auth.md.
`

// runToken is `gateway token SUBCOMMAND [flags]`.
func runToken(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, tokenUsage)
		return nil
	}
	switch args[0] {
	case "keygen":
		return runKeygen(args[1:], stdout)
	case "mint":
		return runMint(args[1:], stdout)
	case "serve-jwks":
		return runServeJWKS(args[1:], stdout)
	}
	return fmt.Errorf("token: unknown subcommand %q (subcommands: keygen, mint, serve-jwks)", args[0])
}

// tokenFlags is a silent FlagSet for a token subcommand; parse reports
// its errors as one line naming the valid flags, and -h prints usage.
func tokenFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway token "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseTokenFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, tokenUsage+"\nFlags of "+fs.Name()+":\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return true, nil
		}
		return false, fmt.Errorf("%s: %v (valid flags: %s)", fs.Name(), err, flagNames(fs))
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("%s: unexpected argument %q (valid flags: %s)", fs.Name(), fs.Arg(0), flagNames(fs))
	}
	return false, nil
}

// runKeygen writes DIR/key.pem (PKCS #8, 0600) and DIR/jwks.json (its
// public half). It refuses to replace a key already there.
func runKeygen(args []string, stdout io.Writer) error {
	fs := tokenFlags("keygen")
	out := fs.String("out", "mcpgw-test-keys", "`directory` to write key.pem and jwks.json to (created)")
	alg := fs.String("alg", "ES256", "signing `algorithm`: ES256 or RS256")
	if help, err := parseTokenFlags(fs, args, stdout); help || err != nil {
		return err
	}
	var key crypto.Signer
	var err error
	switch *alg {
	case "ES256":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "RS256":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return fmt.Errorf("token keygen: --alg %q: want ES256 or RS256", *alg)
	}
	if err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	keyPath := filepath.Join(*out, testKeyFile)
	if _, err := os.Stat(keyPath); err == nil {
		return fmt.Errorf("token keygen: %s exists; not replaced (remove it, or pick another --out)", keyPath)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	set, err := publicSet(key)
	if err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*out, testJWKSFile), set, 0o644); err != nil {
		return fmt.Errorf("token keygen: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (private, keep it here) and %s (%s, kid %s)\nnext: gateway token serve-jwks --dir %s\n",
		keyPath, filepath.Join(*out, testJWKSFile), *alg, mustKid(key), *out)
	return nil
}

// testAlg is the JWS algorithm of a test key.
func testAlg(key crypto.Signer) (jwt.SigningMethod, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("an EC key must be on P-256 (ES256)")
		}
		return jwt.SigningMethodES256, nil
	case *rsa.PrivateKey:
		return jwt.SigningMethodRS256, nil
	}
	return nil, fmt.Errorf("unsupported key type %T (want an EC P-256 or RSA key)", key)
}

// publicJWK is the public half of key as a JWK, its kid the RFC 7638
// thumbprint: mint and keygen derive the same kid from the same key.
func publicJWK(key crypto.Signer) (jose.JSONWebKey, error) {
	m, err := testAlg(key)
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	jwk := jose.JSONWebKey{Key: key.Public(), Algorithm: m.Alg(), Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	jwk.KeyID = fmt.Sprintf("mcpgw-test-%x", tp[:8])
	return jwk, nil
}

func mustKid(key crypto.Signer) string {
	jwk, _ := publicJWK(key)
	return jwk.KeyID
}

// publicSet is the JWK Set of key's public half, as served.
func publicSet(key crypto.Signer) ([]byte, error) {
	jwk, err := publicJWK(key)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk}}, "", "  ")
}

// readTestKey reads a key keygen wrote.
func readTestKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PKCS #8 PEM private key (gateway token keygen writes one)", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported key type %T", path, k)
	}
	if _, err := testAlg(signer); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return signer, nil
}

// runMint prints a signed test token.
func runMint(args []string, stdout io.Writer) error {
	fs := tokenFlags("mint")
	keyPath := fs.String("key", filepath.Join("mcpgw-test-keys", testKeyFile), "private key `file` keygen wrote")
	iss := fs.String("iss", defaultTestIssuer, "issuer (`URL`): the gateway's auth issuer; serve-jwks prints it")
	aud := fs.String("aud", "mcpgw", "audience: the gateway's auth audience")
	sub := fs.String("sub", "tester", "subject: the caller's principal")
	scope := fs.String("scope", "", "space-separated scopes (the scope claim), for access rules with scopes")
	ttl := fs.Duration("ttl", time.Hour, "lifetime, at most 24h")
	if help, err := parseTokenFlags(fs, args, stdout); help || err != nil {
		return err
	}
	switch {
	case *ttl <= 0 || *ttl > maxTestTokenTTL:
		return fmt.Errorf("token mint: --ttl %v: a test token lives more than 0 and at most %v", *ttl, maxTestTokenTTL)
	case *iss == "" || *aud == "" || *sub == "":
		return errors.New("token mint: --iss, --aud and --sub must not be empty")
	}
	key, err := readTestKey(*keyPath)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	method, _ := testAlg(key)
	now := time.Now()
	claims := jwt.MapClaims{"iss": *iss, "aud": *aud, "sub": *sub, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(*ttl).Unix(), testClaim: true}
	if s := strings.TrimSpace(*scope); s != "" {
		claims["scope"] = s
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = mustKid(key)
	signed, err := tok.SignedString(key)
	if err != nil {
		return fmt.Errorf("token mint: %w", err)
	}
	fmt.Fprintln(stdout, signed)
	return nil
}
