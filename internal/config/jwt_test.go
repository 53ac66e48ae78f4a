package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestConfig_RejectsBadAuth(t *testing.T) {
	setSecrets(t)
	t.Setenv("MCPGW_TEST_SHORT", "short-"+testBackendToken[:5])
	t.Setenv("MCPGW_TEST_EMPTY", "")
	dir := t.TempDir()
	privFile := writePEM(t, dir, "priv.pem", "PRIVATE KEY", must(x509.MarshalPKCS8PrivateKey(mustEd25519(t))))
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ia = "issuer: i\naudience: a\n"
	cases := map[string]struct{ yaml, want string }{
		"no auth":            {"virtual_hosts: {demo: {backends: {one: {url: http://h}}}}\n", "auth.mode: required"},
		"no mode":            {"auth: {}\nvirtual_hosts: {demo: {backends: {one: {url: http://h}}}}\n", "auth.mode: required"},
		"bad mode":           {"auth: {mode: basic}\nvirtual_hosts: {demo: {backends: {one: {url: http://h}}}}\n", `auth.mode: "basic" is not a mode`},
		"no jwt block":       {"auth: {mode: jwt}\nvirtual_hosts: {demo: {backends: {one: {url: http://h}}}}\n", "auth.jwt: required"},
		"no issuer":          {withJWT("audience: a\nhs_secret_env: MCPGW_TEST_JWT_SECRET\n"), "auth.jwt.issuer: required"},
		"no audience":        {withJWT("issuer: i\nhs_secret_env: MCPGW_TEST_JWT_SECRET\n"), "auth.jwt.audience: required"},
		"no key":             {withJWT(ia), "auth.jwt: needs a key"},
		"secret unset":       {withJWT(ia + "hs_secret_env: MCPGW_TEST_UNSET_SECRET\n"), "auth.jwt.hs_secret_env: environment variable MCPGW_TEST_UNSET_SECRET is not set"},
		"secret empty":       {withJWT(ia + "hs_secret_env: MCPGW_TEST_EMPTY\n"), "auth.jwt.hs_secret_env: environment variable MCPGW_TEST_EMPTY is empty"},
		"secret short":       {withJWT(ia + "hs_secret_env: MCPGW_TEST_SHORT\n"), "auth.jwt.hs_secret_env: environment variable MCPGW_TEST_SHORT is too short"},
		"secret env name":    {withJWT(ia + "hs_secret_env: \"1-BAD\"\n"), `auth.jwt.hs_secret_env: "1-BAD" is not an environment variable name`},
		"key file missing":   {withJWT(ia + "public_key_file: " + filepath.Join(dir, "nope.pem") + "\n"), "auth.jwt.public_key_file: cannot read"},
		"key file garbage":   {withJWT(ia + "public_key_file: " + garbage + "\n"), "auth.jwt.public_key_file: " + garbage + " holds no PEM public key"},
		"key file private":   {withJWT(ia + "public_key_file: " + privFile + "\n"), "holds a private key"},
		"unknown algorithm":  {withJWT(ia + "hs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [HS256, XS999]\n"), `auth.jwt.algorithms[1]: "XS999" is not a supported algorithm`},
		"lowercase alg":      {withJWT(ia + "hs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [hs256]\n"), `auth.jwt.algorithms[0]: "hs256" is not a supported algorithm`},
		"alg none":           {withJWT(ia + "hs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [none]\n"), `auth.jwt.algorithms[0]: "none" is never accepted`},
		"alg None":           {withJWT(ia + "hs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [None]\n"), `auth.jwt.algorithms[0]: "none" is never accepted`},
		"alg without key":    {withJWT(ia + "hs_secret_env: MCPGW_TEST_JWT_SECRET\nalgorithms: [RS256]\n"), `auth.jwt.algorithms[0]: "RS256" cannot be verified with the configured keys`},
		"hs alg on rsa only": {withJWT(ia + "public_key_file: testdata/keys/jwt.pem\nalgorithms: [HS256]\n"), `auth.jwt.algorithms[0]: "HS256" cannot be verified`},
		"cursor unset":       {"cursor_secret_env: MCPGW_TEST_UNSET_CURSOR\n" + minimal, "cursor_secret_env: environment variable MCPGW_TEST_UNSET_CURSOR is not set"},
		"cursor short":       {"cursor_secret_env: MCPGW_TEST_SHORT\n" + minimal, "cursor_secret_env: environment variable MCPGW_TEST_SHORT is too short"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			checkErr(t, c.yaml, c.want)
			if _, err := Parse([]byte(c.yaml), src); err != nil && strings.Contains(err.Error(), "short-"+testBackendToken[:5]) {
				t.Errorf("short secret leaked: %v", err)
			}
		})
	}
}

func TestConfig_LoadsPublicKeyFormats(t *testing.T) {
	dir := t.TempDir()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	smallRSA, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // testing the size check
	if err != nil {
		t.Fatal(err)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	edPriv := mustEd25519(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jwt"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	certDER := must(x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p256.PublicKey, p256))

	cases := map[string]struct {
		file  string
		algs  []string
		isErr string
	}{
		"rsa pkix":    {file: writePEM(t, dir, "rsa.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey))), algs: []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}},
		"rsa pkcs1":   {file: writePEM(t, dir, "rsa1.pem", "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)), algs: []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}},
		"ecdsa p256":  {file: writePEM(t, dir, "p256.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&p256.PublicKey))), algs: []string{"ES256"}},
		"ecdsa p384":  {file: writePEM(t, dir, "p384.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&p384.PublicKey))), algs: []string{"ES384"}},
		"ecdsa p521":  {file: writePEM(t, dir, "p521.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&p521.PublicKey))), algs: []string{"ES512"}},
		"ed25519":     {file: writePEM(t, dir, "ed.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(edPriv.Public()))), algs: []string{"EdDSA"}},
		"certificate": {file: writePEM(t, dir, "cert.pem", "CERTIFICATE", certDER), algs: []string{"ES256"}},
		"small rsa":   {file: writePEM(t, dir, "small.pem", "PUBLIC KEY", must(x509.MarshalPKIXPublicKey(&smallRSA.PublicKey))), isErr: "RSA key has 1024 bits"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			y := withJWT("issuer: i\naudience: a\npublic_key_file: " + c.file + "\n")
			if c.isErr != "" {
				checkErr(t, y, "auth.jwt.public_key_file: ", c.isErr)
				return
			}
			cfg := mustParse(t, y)
			if got := cfg.Auth.JWT.Algorithms; !reflect.DeepEqual(got, c.algs) {
				t.Errorf("algorithms %q, want %q", got, c.algs)
			}
			if cfg.Auth.JWT.HMACSecret != nil || cfg.Auth.JWT.Leeway != DefaultLeeway {
				t.Errorf("settings: %+v", cfg.Auth.JWT)
			}
		})
	}

	// Two public keys in one file are ambiguous.
	two := filepath.Join(dir, "two.pem")
	data := append(must(os.ReadFile(filepath.Join(dir, "p256.pem"))), must(os.ReadFile(filepath.Join(dir, "ed.pem")))...)
	if err := os.WriteFile(two, data, 0o600); err != nil {
		t.Fatal(err)
	}
	checkErr(t, withJWT("issuer: i\naudience: a\npublic_key_file: "+two+"\n"), "holds more than one public key")

	// An explicit allow-list narrows the default.
	cfg := mustParse(t, withJWT("issuer: i\naudience: a\npublic_key_file: "+cases["rsa pkix"].file+"\nalgorithms: [PS256, RS256, RS256]\n"))
	if got := cfg.Auth.JWT.Algorithms; !reflect.DeepEqual(got, []string{"PS256", "RS256"}) {
		t.Errorf("algorithms %q", got)
	}
}

func TestConfig_ResolvesKeyFileRelativeToConfigFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys", "jwt.pem"), must(os.ReadFile("testdata/keys/jwt.pem")), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(path, []byte(withJWT("issuer: i\naudience: a\npublic_key_file: keys/jwt.pem\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.JWT.PublicKey == nil || cfg.Source != path {
		t.Errorf("key not loaded or source wrong: %+v", cfg)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml: cannot read config") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestConfig_ModeNoneIgnoresJWTBlock(t *testing.T) {
	cfg := mustParse(t, "auth:\n  mode: none\n  jwt: {issuer: i}\nvirtual_hosts: {demo: {backends: {one: {url: http://h}}}}\n")
	if cfg.Auth.Mode != ModeNone || cfg.Auth.JWT != nil {
		t.Errorf("auth: %+v", cfg.Auth)
	}
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
