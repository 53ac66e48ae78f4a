package config

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router/credentials"
)

// The auth section: which callers get in. One trusted issuer (auth.jwt)
// or several (auth.issuers), each with its keys configured (an HMAC
// secret, a PEM public key, a jwks_url) or discovered from the issuer,
// and optionally RFC 7662 introspection for opaque tokens. Keys that come
// from the network are fetched by handler/auth; nothing here touches the
// network, so `gateway check` and a Lambda cold start never wait on an
// identity provider.

// Defaults of the auth section.
const (
	DefaultIntrospectionCache = 30 * time.Second
	maxIntrospectionCache     = time.Hour
)

// asymmetricAlgorithms are the algorithms of keys fetched from a JWK Set:
// never HMAC, whose key would be the public JWK itself.
var asymmetricAlgorithms = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

func (v *validator) auth(raw *rawAuth, baseDir string) Auth {
	if raw == nil || raw.Mode == "" {
		v.errf("auth.mode", "required (jwt or none)")
		return Auth{}
	}
	switch raw.Mode {
	case ModeNone:
		// auth.jwt may stay in the file for switching modes; it is ignored.
		if raw.ResourceMetadata != nil {
			v.errf("auth.resource_metadata", "needs auth.mode jwt: there is no token to get")
		}
		return Auth{Mode: ModeNone}
	case ModeJWT:
	default:
		v.errf("auth.mode", "%q is not a mode (want jwt or none)", raw.Mode)
		return Auth{}
	}
	a := Auth{Mode: ModeJWT}
	switch {
	case raw.JWT != nil && raw.Issuers != nil:
		v.errf("auth.issuers", "set auth.jwt (one issuer) or auth.issuers (several), not both")
		return a
	case raw.JWT != nil:
		a.JWT = v.issuer("auth.jwt", raw.JWT, baseDir)
		if a.JWT != nil {
			a.Issuers = []*JWTSettings{a.JWT}
		}
	case len(raw.Issuers) > 0:
		a.QualifiedPrincipals = true
		seen := map[string]bool{}
		introspecting := ""
		for i, r := range raw.Issuers {
			p := indexPath("auth.issuers", i)
			if r == nil {
				v.errf(p, "empty issuer entry")
				continue
			}
			s := v.issuer(p, r, baseDir)
			if s == nil {
				continue
			}
			if seen[s.Issuer] {
				v.errf(p+".issuer", "issuer %q is listed twice", s.Issuer)
			}
			if strings.Contains(s.Issuer, "#") {
				// The principal is {iss}#{sub}: split at the first '#', it
				// names one issuer and one subject only when no issuer
				// holds one (an OpenID issuer has no fragment).
				v.errf(p+".issuer", "issuer %q holds a '#': with several issuers a caller is {issuer}#{subject}, "+
					"and an issuer with '#' could make two callers one", s.Issuer)
			}
			seen[s.Issuer] = true
			if s.Introspection != nil {
				// An opaque token names no issuer: it can go to one
				// introspection endpoint only, or it would reach a
				// provider that did not issue it.
				if introspecting != "" {
					v.errf(p+".introspection", "only one issuer may configure introspection (%s already does)", introspecting)
				}
				introspecting = p
			}
			a.Issuers = append(a.Issuers, s)
		}
	default:
		v.errf("auth.jwt", "required when auth.mode is jwt (or auth.issuers, for several issuers)")
		return a
	}
	a.ResourceMetadata = v.resourceMetadata(raw.ResourceMetadata, a.Issuers)
	return a
}

// issuer validates one trusted issuer at path (auth.jwt or
// auth.issuers[i]); nil when it cannot be used at all.
func (v *validator) issuer(path string, j *rawJWT, baseDir string) *JWTSettings {
	s := &JWTSettings{
		Issuer:        strings.TrimSpace(j.Issuer),
		AudienceClaim: strings.TrimSpace(j.AudienceClaim),
		Leeway:        v.duration(path+".leeway", j.Leeway, DefaultLeeway, 0),
	}
	if s.Issuer == "" {
		v.errf(path+".issuer", "required when auth.mode is jwt")
	}
	v.audiences(path+".audience", j.Audience, s)
	if j.AudienceClaim != "" && (s.AudienceClaim == "" || strings.ContainsAny(s.AudienceClaim, " \t\"")) {
		v.errf(path+".audience_claim", "%q is not a claim name", j.AudienceClaim)
	}
	if j.Introspection != nil {
		s.Introspection = v.introspection(path+".introspection", j.Introspection)
	}
	jwksURL := strings.TrimSpace(j.JWKSURL)
	switch {
	case jwksURL != "" && (j.HSSecretEnv != "" || j.PublicKeyFile != ""):
		v.errf(path+".jwks_url", "set jwks_url or hs_secret_env/public_key_file, not both")
		return s
	case jwksURL != "":
		if msg := keyURLProblem(jwksURL); msg != "" {
			v.errf(path+".jwks_url", "%s", msg)
		}
		s.JWKSURL = jwksURL
	case j.HSSecretEnv == "" && j.PublicKeyFile == "":
		if s.Issuer == "" {
			return s
		}
		if msg := keyURLProblem(s.Issuer); msg != "" {
			v.errf(path, "needs a key: set hs_secret_env, public_key_file or jwks_url, or make issuer the provider's issuer URL "+
				"to discover its keys (issuer %s)", strings.TrimPrefix(msg, "is "))
			return s
		}
		s.Discover = true
	}
	keysOK := true
	if j.HSSecretEnv != "" {
		s.HMACSecret = v.secretEnv(path+".hs_secret_env", j.HSSecretEnv)
		keysOK = keysOK && s.HMACSecret != nil
	}
	if j.PublicKeyFile != "" {
		file := j.PublicKeyFile
		if !filepath.IsAbs(file) {
			file = filepath.Join(baseDir, file)
		}
		key, err := loadPublicKey(file)
		if err != nil {
			v.errf(path+".public_key_file", "%s", errMsg(err))
			keysOK = false
		}
		s.PublicKey = key
	}
	supported := s.KeyAlgorithms()
	if s.RemoteKeys() {
		supported = asymmetricAlgorithms
	}
	if len(j.Algorithms) == 0 {
		s.Algorithms = supported
	}
	seen := map[string]bool{}
	for i, alg := range j.Algorithms {
		p := indexPath(path+".algorithms", i)
		switch {
		case strings.EqualFold(alg, "none"):
			v.errf(p, `"none" is never accepted`)
		case !knownAlgorithm(alg):
			v.errf(p, "%q is not a supported algorithm (want one of %s)", alg, strings.Join(allAlgorithms, ", "))
		case s.RemoteKeys() && !contains(supported, alg):
			v.errf(p, "%q cannot be verified with keys from a JWK Set (they support %s)", alg, strings.Join(supported, ", "))
		case keysOK && !contains(supported, alg):
			v.errf(p, "%q cannot be verified with the configured keys (they support %s)", alg, strings.Join(supported, ", "))
		case !seen[alg]:
			seen[alg] = true
			s.Algorithms = append(s.Algorithms, alg)
		}
	}
	return s
}

// audiences validates an issuer's audience: one string, a list, or
// "resource" (alone: it means only the vhost's own URL).
func (v *validator) audiences(path string, raw stringList, s *JWTSettings) {
	if len(raw) == 0 {
		v.errf(path, "required when auth.mode is jwt (a string, a list, or %q for the vhost's own URL)", AudienceResource)
		return
	}
	seen := map[string]bool{}
	for i, a := range raw {
		a = strings.TrimSpace(a)
		p := path
		if len(raw) > 1 {
			p = indexPath(path, i)
		}
		switch {
		case a == "":
			v.errf(p, "an audience is a non-empty string")
		case a == AudienceResource && len(raw) > 1:
			v.errf(p, "%q stands alone: it accepts only the vhost's own URL, and any token for the vhost's URL is accepted anyway", AudienceResource)
		case seen[a]:
			v.errf(p, "audience %q is listed twice", a)
		default:
			seen[a] = true
			if a != AudienceResource {
				s.Audiences = append(s.Audiences, a)
			}
		}
	}
	if len(s.Audiences) > 0 {
		s.Audience = s.Audiences[0]
	} else if seen[AudienceResource] {
		s.Audience = AudienceResource
	}
}

// introspection validates an issuer's RFC 7662 endpoint and its client.
// The secret's variable is named in messages, its value never.
func (v *validator) introspection(path string, raw *rawIntrospection) *Introspection {
	in := &Introspection{URL: strings.TrimSpace(raw.URL), ClientID: strings.TrimSpace(raw.ClientID)}
	if msg := tokenURLProblem(in.URL); msg != "" {
		v.errf(path+".url", "%s", strings.Replace(msg, "the client secret and the caller's token are", "every caller's token is", 1))
	}
	switch name := strings.TrimSpace(raw.ClientSecretEnv); {
	case name == "":
	case in.ClientID == "":
		v.errf(path+".client_id", "required with client_secret_env")
	case !envNameRE.MatchString(name):
		v.errf(path+".client_secret_env", "%q is not an environment variable name", name)
	default:
		val, set := os.LookupEnv(name)
		switch {
		case !set:
			v.errf(path+".client_secret_env", "environment variable %s is not set", name)
		case val == "":
			v.errf(path+".client_secret_env", "environment variable %s is empty", name)
		}
		in.ClientSecret, in.SecretEnv = credentials.Secret(val), name
	}
	in.Cache = v.duration(path+".cache", raw.Cache, DefaultIntrospectionCache, 0)
	if in.Cache > maxIntrospectionCache {
		v.errf(path+".cache", "must be at most %s: a revoked token stays accepted this long", maxIntrospectionCache)
	}
	return in
}

// keyURLProblem says what is wrong with a URL keys are fetched from (a
// jwks_url, or an issuer whose metadata names them), or "". Whoever can
// change the keys in transit can mint tokens, so it must be https, except
// on a loopback host.
func keyURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a valid URL"
	case u.Host == "" || u.Opaque != "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "is not an absolute http(s) URL"
	case u.User != nil:
		return "must not hold credentials"
	case u.RawQuery != "" || u.Fragment != "":
		return "must not have a query or fragment"
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return "must use https (whoever can change the keys in transit can mint tokens); http is accepted only on a loopback host"
	}
	return ""
}

// resourceMetadata validates auth.resource_metadata. Without it, the
// metadata is published when some issuer is a provider the gateway talks
// to (remote keys or introspection), naming the issuers as the
// authorization servers; with it, authorization_servers defaults to the
// issuers that are URLs.
func (v *validator) resourceMetadata(raw *rawResourceMetadata, issuers []*JWTSettings) *ResourceMetadata {
	var fromIssuers []string
	provider := false
	for _, s := range issuers {
		if keyURLProblem(s.Issuer) == "" {
			fromIssuers = append(fromIssuers, s.Issuer)
		}
		provider = provider || s.RemoteKeys() || s.Introspection != nil
	}
	if raw == nil {
		if !provider || len(fromIssuers) == 0 {
			return nil
		}
		return &ResourceMetadata{AuthorizationServers: fromIssuers}
	}
	const path = "auth.resource_metadata"
	rm := &ResourceMetadata{ScopesSupported: raw.ScopesSupported}
	v.rawAuthServers = raw.AuthorizationServers
	if len(raw.AuthorizationServers) == 0 {
		if len(fromIssuers) == 0 {
			v.errf(path+".authorization_servers", "at least one authorization server (its issuer URL) is required")
		}
		rm.AuthorizationServers = fromIssuers
	}
	for i, s := range raw.AuthorizationServers {
		s = strings.TrimSpace(s)
		rm.AuthorizationServers = append(rm.AuthorizationServers, v.backendURL(indexPath(path+".authorization_servers", i), s))
	}
	for i, sc := range raw.ScopesSupported {
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			v.errf(indexPath(path+".scopes_supported", i), "%q is not a scope (no spaces, quotes or backslashes)", sc)
		}
	}
	if u := strings.TrimSpace(raw.PublicURL); u != "" {
		rm.PublicURL = strings.TrimRight(v.backendURL(path+".public_url", u), "/")
		if pu, err := url.Parse(u); err == nil && (pu.RawQuery != "" || pu.Fragment != "") {
			v.errf(path+".public_url", "must not have a query or fragment")
		}
	}
	return rm
}

// ResourceBaseURL is the base of every vhost's canonical resource URL
// ({base}/servers/{vhost}/mcp): auth.resource_metadata.public_url, else
// public_url; "" when neither is set (the gateway then knows its URL only
// from each request's Host, which a caller chooses, so no token is
// accepted for its resource URL).
func (a *Auth) ResourceBaseURL(publicURL string) string {
	if rm := a.ResourceMetadata; rm != nil && rm.PublicURL != "" {
		return rm.PublicURL
	}
	return publicURL
}

// resourceAudience refuses audience: resource where the gateway does not
// know its own URL.
func (v *validator) resourceAudience(raw *rawAuth, cfg *Config) {
	if raw == nil || cfg.Auth.Mode != ModeJWT || cfg.Auth.ResourceBaseURL(cfg.PublicURL) != "" {
		return
	}
	for i, s := range cfg.Auth.Issuers {
		if s.Audience != AudienceResource {
			continue
		}
		path := "auth.jwt.audience"
		if raw.JWT == nil {
			path = indexPath("auth.issuers", i) + ".audience"
		}
		v.errf(path, "%q needs public_url: a vhost's resource URL is {public_url}/servers/{vhost}/mcp, "+
			"and a URL taken from the request's Host could be any", AudienceResource)
	}
}
