package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
)

// Defaults of a backend's credentials.
const (
	DefaultTokenTimeout   = 10 * time.Second
	DefaultTokenCacheSize = 10000
)

// backendCredentials validates a backend's `credentials` and the rules
// that tie them, and claim templates, to the rest of the backend: the
// gateway's token replaces any configured Authorization, and per-caller
// answers cannot be cached for everyone.
func (v *validator) backendCredentials(path string, raw *rawBackend, b *router.Backend) {
	if raw.Credentials != nil {
		b.Credentials = v.credentials(joinPath(path, "credentials"), raw.Credentials)
	}
	if b.Credentials != nil {
		if _, ok := b.AddHeaders["Authorization"]; ok || b.HeaderTemplates["Authorization"] != nil {
			v.errf(joinPath(joinPath(path, "add_headers"), "Authorization"), "Authorization is set by credentials on this backend: remove it from add_headers")
		}
		for i, h := range b.RemoveHeaders {
			if h == "Authorization" {
				v.errf(indexPath(joinPath(path, "remove_headers"), i), "Authorization carries the token of credentials on this backend: it cannot be removed")
			}
		}
	}
	if b.ListCacheTTL > 0 && (len(b.HeaderTemplates) > 0 || b.Credentials.PerCaller()) {
		v.errf(joinPath(path, "list_cache"), "cannot be used with per-caller credentials (claim templates in add_headers, token_exchange or user_oauth): cached pages are shared by every caller")
	}
}

// credentials validates one backend's credentials block: exactly one
// grant, its endpoint and client, and the secret's environment variable
// (named in messages, its value never).
func (v *validator) credentials(path string, raw *rawCredentials) *credentials.Settings {
	var g *rawTokenGrant
	s := &credentials.Settings{}
	if raw.UserOAuth != nil {
		if raw.TokenExchange != nil || raw.ClientCredentials != nil {
			v.errf(path, "set one of token_exchange, client_credentials and user_oauth, not several")
			return nil
		}
		return v.userOAuth(joinPath(path, "user_oauth"), raw.UserOAuth)
	}
	switch {
	case raw.TokenExchange != nil && raw.ClientCredentials != nil:
		v.errf(path, "set one of token_exchange and client_credentials, not both")
		return nil
	case raw.TokenExchange != nil:
		g, s.Grant, path = raw.TokenExchange, credentials.GrantTokenExchange, joinPath(path, "token_exchange")
	case raw.ClientCredentials != nil:
		g, s.Grant, path = raw.ClientCredentials, credentials.GrantClientCredentials, joinPath(path, "client_credentials")
	default:
		v.errf(path, "set token_exchange, client_credentials or user_oauth")
		return nil
	}
	ok := true
	bad := func(field, format string, args ...any) {
		v.errf(joinPath(path, field), format, args...)
		ok = false
	}
	s.TokenURL = strings.TrimSpace(g.TokenURL)
	if msg := tokenURLProblem(s.TokenURL); msg != "" {
		bad("token_url", "%s", msg)
	}
	if s.ClientID = strings.TrimSpace(g.ClientID); s.ClientID == "" {
		bad("client_id", "required")
	}
	switch name := strings.TrimSpace(g.ClientSecretEnv); {
	case name == "":
		bad("client_secret_env", "required: the name of the environment variable holding the client secret")
	case !envNameRE.MatchString(name):
		bad("client_secret_env", "%q is not an environment variable name", name)
	default:
		val, set := os.LookupEnv(name)
		switch {
		case !set:
			bad("client_secret_env", "environment variable %s is not set", name)
		case val == "":
			bad("client_secret_env", "environment variable %s is empty", name)
		}
		s.ClientSecret, s.SecretEnv = credentials.Secret(val), name
	}
	s.Audience = strings.TrimSpace(g.Audience)
	if s.Resource = strings.TrimSpace(g.Resource); s.Resource != "" {
		if u, err := url.Parse(s.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			bad("resource", "must be an absolute URI without a fragment (RFC 8707)")
		}
	}
	for i, sc := range g.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\"\\") || !validHeaderValue(sc) {
			v.errf(indexPath(joinPath(path, "scopes"), i), "a scope is a non-empty word without spaces, quotes or backslashes")
			ok = false
			continue
		}
		s.Scopes = append(s.Scopes, sc)
	}
	var msg string
	if s.SubjectTokenType, msg = subjectTokenType(s.Grant, g.SubjectTokenType); msg != "" {
		bad("subject_token_type", "%s", msg)
	}
	s.Timeout = v.duration(joinPath(path, "timeout"), g.Timeout, DefaultTokenTimeout, time.Millisecond)
	s.MaxEntries = DefaultTokenCacheSize
	if g.CacheSize != nil {
		if *g.CacheSize < 1 || *g.CacheSize > 1_000_000 {
			bad("cache_size", "must be between 1 and 1000000, not %d", *g.CacheSize)
		} else {
			s.MaxEntries = int(*g.CacheSize)
		}
	}
	if !ok {
		return nil
	}
	return s
}

// subjectTokenType is the token type URI a grant's subject_token_type
// names (the access token's when unset), or what is wrong with it.
func subjectTokenType(grant credentials.Grant, raw string) (uri, problem string) {
	switch t := strings.TrimSpace(raw); {
	case grant == credentials.GrantClientCredentials && t != "":
		return "", "only token_exchange has a subject token"
	case t == "", t == "access_token", t == credentials.TokenTypeAccessToken:
		return credentials.TokenTypeAccessToken, ""
	case t == "jwt", t == credentials.TokenTypeJWT:
		return credentials.TokenTypeJWT, ""
	default:
		return "", fmt.Sprintf("%q is not a subject token type (want access_token or jwt)", t)
	}
}

// tokenURLProblem says what is wrong with a token endpoint URL, or "". The
// client secret and the caller's token travel to it, so it must be https,
// except on a loopback host (a sidecar, or tests).
func tokenURLProblem(s string) string {
	if s == "" {
		return "required"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a valid URL"
	case u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "must be an absolute http(s) URL"
	case u.User != nil:
		return "must not hold credentials (use client_id and client_secret_env)"
	case u.Fragment != "":
		return "must not have a fragment"
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return "must use https (the client secret and the caller's token are sent to it); http is accepted only on a loopback host"
	}
	return ""
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// callerCredentialsNeedJWT refuses claim templates and token exchange
// under auth mode none: the caller then has no claims and no token, so
// every request to the backend would fail.
func (v *validator) callerCredentialsNeedJWT(cfg *Config) {
	if cfg.Auth.Mode != ModeNone {
		return
	}
	for _, vh := range sortedKeys(cfg.VirtualHosts) {
		for _, key := range sortedKeys(cfg.VirtualHosts[vh].Backends) {
			b := cfg.VirtualHosts[vh].Backends[key]
			path := joinPath(joinPath(joinPath("virtual_hosts", vh), "backends"), key)
			for _, h := range sortedKeys(b.HeaderTemplates) {
				v.errf(joinPath(joinPath(path, "add_headers"), h), "claim templates need auth.mode jwt: in mode none callers have no claims")
			}
			if b.Credentials.PerCaller() && b.Credentials.Grant == credentials.GrantTokenExchange {
				v.errf(joinPath(joinPath(path, "credentials"), "token_exchange"), "token_exchange needs auth.mode jwt: in mode none callers have no token to exchange")
			}
		}
	}
}
