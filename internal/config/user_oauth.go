package config

import (
	"encoding/base64"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router/credentials"
)

// Per-user sign-in to third-party backends (credentials.user_oauth):
// public_url, user_tokens and auth.login, and the rules that tie them
// together. A user_oauth backend needs all three: the browser reaches
// the gateway at public_url, proves who it is by an OIDC login at the
// gateway's own issuer (auth.login), and the tokens it brings back are
// sealed under the user_tokens key.

// UserTokens is the user_tokens section: the key that seals users'
// tokens in the store, shared by every instance.
type UserTokens struct {
	// Key is 32 bytes (AES-256-GCM), from the environment variable
	// KeyEnv (base64). Never log it.
	Key    credentials.Secret
	KeyEnv string
}

// Login is auth.login: the gateway as an OIDC client of its own issuer
// (auth.jwt.issuer), to learn who opened a connect link.
type Login struct {
	ClientID     string
	ClientSecret credentials.Secret
	SecretEnv    string
	// Scopes always hold openid.
	Scopes []string
}

type rawUserTokens struct {
	// Environment variable holding the sealing key: 32 bytes in base64
	// (openssl rand -base64 32), the same on every instance.
	KeyEnv string `yaml:"key_env" jsonschema:"required"`
}

type rawLogin struct {
	// The gateway's client id at auth.jwt.issuer.
	ClientID string `yaml:"client_id"`
	// Environment variable holding the client secret.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// Scopes asked for; openid is always asked.
	Scopes []string `yaml:"scopes"`
}

type rawUserOAuth struct {
	// The third party's issuer: its endpoints are discovered (OpenID
	// Connect, then RFC 8414). Or give authorization_url and token_url.
	Issuer string `yaml:"issuer"`
	// The authorization endpoint, when there is no issuer to discover.
	AuthorizationURL string `yaml:"authorization_url"`
	// The token endpoint, when there is no issuer to discover.
	TokenURL string `yaml:"token_url"`
	// The token revocation endpoint (RFC 7009), when the metadata names
	// none.
	RevocationURL string `yaml:"revocation_url"`
	// The gateway's client id at the third party.
	ClientID string `yaml:"client_id"`
	// Environment variable holding the client secret.
	ClientSecretEnv string `yaml:"client_secret_env"`
	// How the gateway authenticates at the token endpoint.
	TokenEndpointAuth string `yaml:"token_endpoint_auth" jsonschema:"enum=client_secret_basic,enum=client_secret_post,default=client_secret_basic"`
	// Scopes asked for.
	Scopes []string `yaml:"scopes"`
	// Bounds one token request.
	Timeout *rawDuration `yaml:"timeout" jsonschema:"default=10s"`
}

// publicURL validates the top-level public_url: the browser-facing base
// URL, without a trailing slash.
func (v *validator) publicURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	const path = "public_url"
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Opaque != "":
		v.errf(path, "%q is not an http(s) URL", displayURL(s))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		v.errf(path, "must not hold credentials, a query or a fragment")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		v.errf(path, "must use https (sign-in codes and cookies travel on it); http is accepted only on a loopback host")
	}
	return strings.TrimRight(s, "/")
}

func (v *validator) userTokens(raw *rawUserTokens) *UserTokens {
	if raw == nil {
		return nil
	}
	const path = "user_tokens.key_env"
	name := strings.TrimSpace(raw.KeyEnv)
	switch val, set := os.LookupEnv(name); {
	case name == "":
		v.errf(path, "required: the name of the environment variable holding the 32-byte key (base64)")
	case !envNameRE.MatchString(name):
		v.errf(path, "%q is not an environment variable name", name)
	case !set || val == "":
		v.errf(path, "environment variable %s is not set or empty", name)
	default:
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
		if err != nil {
			key, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(val), "="))
		}
		if err != nil || len(key) != 32 {
			v.errf(path, "environment variable %s must hold 32 bytes in base64 (openssl rand -base64 32)", name)
			return nil
		}
		return &UserTokens{Key: credentials.Secret(key), KeyEnv: name}
	}
	return nil
}

func (v *validator) login(raw *rawLogin) *Login {
	if raw == nil {
		return nil
	}
	const path = "auth.login"
	l := &Login{ClientID: strings.TrimSpace(raw.ClientID)}
	if l.ClientID == "" {
		v.errf(path+".client_id", "required")
	}
	l.ClientSecret, l.SecretEnv = v.clientSecret(path+".client_secret_env", raw.ClientSecretEnv)
	l.Scopes = []string{"openid"}
	for i, sc := range raw.Scopes {
		if !scopeOK(sc) {
			v.errf(indexPath(path+".scopes", i), "a scope is a non-empty word without spaces, quotes or backslashes")
		} else if sc != "openid" {
			l.Scopes = append(l.Scopes, sc)
		}
	}
	return l
}

func scopeOK(sc string) bool {
	return sc != "" && !strings.ContainsAny(sc, " \t\"\\") && validHeaderValue(sc)
}

// clientSecret reads a client secret's environment variable; the value is
// never part of a message.
func (v *validator) clientSecret(path, name string) (credentials.Secret, string) {
	name = strings.TrimSpace(name)
	switch val, set := os.LookupEnv(name); {
	case name == "":
		v.errf(path, "required: the name of the environment variable holding the client secret")
	case !envNameRE.MatchString(name):
		v.errf(path, "%q is not an environment variable name", name)
	case !set:
		v.errf(path, "environment variable %s is not set", name)
	case val == "":
		v.errf(path, "environment variable %s is empty", name)
	default:
		return credentials.Secret(val), name
	}
	return "", name
}

// userOAuth validates a backend's credentials.user_oauth.
func (v *validator) userOAuth(path string, g *rawUserOAuth) *credentials.Settings {
	n := len(v.errs)
	s := &credentials.Settings{Grant: credentials.GrantUserOAuth, UserOAuth: &credentials.UserOAuth{}}
	u := s.UserOAuth
	u.Issuer = strings.TrimSpace(g.Issuer)
	u.AuthorizationURL = strings.TrimSpace(g.AuthorizationURL)
	s.TokenURL = strings.TrimSpace(g.TokenURL)
	switch {
	case u.Issuer != "" && (u.AuthorizationURL != "" || s.TokenURL != ""):
		v.errf(joinPath(path, "issuer"), "set issuer (metadata discovered) or authorization_url and token_url, not both")
	case u.Issuer != "":
		if msg := tokenURLProblem(u.Issuer); msg != "" {
			v.errf(joinPath(path, "issuer"), "%s", msg)
		}
	case u.AuthorizationURL == "" && s.TokenURL == "":
		v.errf(path, "set issuer (its metadata is discovered) or authorization_url and token_url")
	default:
		if msg := tokenURLProblem(u.AuthorizationURL); msg != "" {
			v.errf(joinPath(path, "authorization_url"), "%s", msg)
		}
		if msg := tokenURLProblem(s.TokenURL); msg != "" {
			v.errf(joinPath(path, "token_url"), "%s", msg)
		}
	}
	if u.RevocationURL = strings.TrimSpace(g.RevocationURL); u.RevocationURL != "" {
		if msg := tokenURLProblem(u.RevocationURL); msg != "" {
			v.errf(joinPath(path, "revocation_url"), "%s", msg)
		}
	}
	if s.ClientID = strings.TrimSpace(g.ClientID); s.ClientID == "" {
		v.errf(joinPath(path, "client_id"), "required")
	}
	s.ClientSecret, s.SecretEnv = v.clientSecret(joinPath(path, "client_secret_env"), g.ClientSecretEnv)
	switch a := strings.TrimSpace(g.TokenEndpointAuth); a {
	case "", credentials.AuthClientSecretBasic:
		u.TokenEndpointAuth = credentials.AuthClientSecretBasic
	case credentials.AuthClientSecretPost:
		u.TokenEndpointAuth = a
	default:
		v.errf(joinPath(path, "token_endpoint_auth"), "%q is not supported (want client_secret_basic or client_secret_post)", a)
	}
	for i, sc := range g.Scopes {
		if !scopeOK(sc) {
			v.errf(indexPath(joinPath(path, "scopes"), i), "a scope is a non-empty word without spaces, quotes or backslashes")
			continue
		}
		s.Scopes = append(s.Scopes, sc)
	}
	s.Timeout = v.duration(joinPath(path, "timeout"), g.Timeout, DefaultTokenTimeout, time.Millisecond)
	s.MaxEntries = DefaultTokenCacheSize
	if len(v.errs) > n {
		return nil
	}
	return s
}

// userOAuthNeeds refuses user_oauth backends without what the sign-in
// needs: a verified person (auth.mode jwt), public_url, user_tokens and
// auth.login. Each refusal names the backend's field.
func (v *validator) userOAuthNeeds(cfg *Config) {
	for _, vh := range sortedKeys(cfg.VirtualHosts) {
		for _, key := range sortedKeys(cfg.VirtualHosts[vh].Backends) {
			b := cfg.VirtualHosts[vh].Backends[key]
			if b.Credentials == nil || b.Credentials.Grant != credentials.GrantUserOAuth {
				continue
			}
			path := joinPath(joinPath(joinPath(joinPath(joinPath("virtual_hosts", vh), "backends"), key), "credentials"), "user_oauth")
			b.Credentials.UserOAuth.VHost, b.Credentials.UserOAuth.Backend = vh, key
			switch {
			case cfg.Auth.Mode == ModeNone:
				v.errf(path, "needs auth.mode jwt: a connect link must be bound to a verified person, and in mode none every caller is anonymous")
				continue
			case cfg.PublicURL == "":
				v.errf(path, "needs public_url: the browser is sent to {public_url}/oauth/connect and back to {public_url}/oauth/callback")
			}
			if cfg.UserTokens == nil {
				v.errf(path, "needs user_tokens.key_env: users' tokens are sealed in the store under that key")
			}
			if cfg.Auth.Login == nil {
				v.errf(path, "needs auth.login: the gateway signs the browser in at its own issuer to learn who opened a connect link")
			} else if cfg.Auth.JWT == nil || keyURLProblem(cfg.Auth.JWT.Issuer) != "" {
				v.errf("auth.login", "needs auth.jwt with an issuer URL (the OpenID provider the gateway signs browsers in at)")
			}
		}
	}
}
