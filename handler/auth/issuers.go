package auth

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mcpgw/gateway/internal/config"
)

// A gateway may trust several issuers (auth.issuers): a token is matched
// to one by its unverified iss, then verified with that issuer's keys and
// audience only. A bearer token that is not a JWT of a configured issuer
// goes to the one issuer that introspects, if any (an opaque token names
// no issuer, so it is never sent to a provider that may not have issued
// it). With several issuers the principal is "{iss}#{sub}", so equal
// subjects of two providers are different callers; with one it stays
// "sub", so sessions made before the upgrade still belong to their owner.

// Option adjusts what New builds.
type Option func(*options)

type options struct {
	logger           *slog.Logger
	httpClient       *http.Client // key and discovery fetches
	noRedirectClient *http.Client // introspection: the token and secret go nowhere else
	timing           keyTiming
	own              *OwnIssuer
}

// WithLogger logs key fetch and introspection failures to l (default
// slog.Default()). Tokens and secrets are never logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// New builds the Verifier for an auth setting: mode "none" accepts every
// caller as Anonymous; mode "jwt" verifies bearer tokens of the trusted
// issuers. Keys fetched from an issuer are fetched in the background from
// now on (New never waits for a provider); Close stops that.
func New(a config.Auth, opts ...Option) (Verifier, error) {
	switch a.Mode {
	case config.ModeNone:
		return anonymous{}, nil
	case config.ModeJWT:
	default:
		return nil, fmt.Errorf("auth: unknown mode %q", a.Mode)
	}
	if err := Check(a); err != nil {
		return nil, err
	}
	o := &options{logger: slog.Default(), timing: defaultKeyTiming}
	for _, f := range opts {
		f(o)
	}
	o.httpClient = &http.Client{Transport: newTransport()}
	o.noRedirectClient = &http.Client{Transport: o.httpClient.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	list := issuersOf(a)
	if len(list) == 1 && list[0].Introspection == nil && !a.QualifiedPrincipals && o.own == nil {
		return newJWT(list[0], o) // auth.jwt: the one-issuer verifier as before
	}
	v := &issuersVerifier{byIssuer: map[string]*jwtVerifier{}, qualify: a.QualifiedPrincipals}
	if o.own != nil {
		v.byIssuer[o.own.Issuer], v.ownIssuer = newOwnJWT(o.own), o.own.Issuer
	}
	for _, s := range list {
		jv, err := newJWT(s, o)
		if err != nil {
			v.Close()
			return nil, err
		}
		v.byIssuer[s.Issuer] = jv
		if s.Introspection != nil {
			v.intro, v.introIssuer = newIntrospector(s, o), s.Issuer
		}
	}
	if len(list) == 1 && o.own == nil {
		v.only = v.byIssuer[list[0].Issuer]
	}
	return v, nil
}

// Check validates an auth setting as New would, without fetching or
// starting anything (gateway check, a Lambda's init).
func Check(a config.Auth) error {
	switch a.Mode {
	case config.ModeNone:
		return nil
	case config.ModeJWT:
	default:
		return fmt.Errorf("auth: unknown mode %q", a.Mode)
	}
	list := issuersOf(a)
	if len(list) == 0 {
		return fmt.Errorf("auth: jwt mode needs JWT settings")
	}
	intro := 0
	for _, s := range list {
		if _, err := checkJWT(s); err != nil {
			return err
		}
		if a.QualifiedPrincipals && strings.Contains(s.Issuer, "#") {
			return fmt.Errorf("auth: issuer %q holds a '#': principals {iss}#{sub} would not name one caller each", s.Issuer)
		}
		if s.Introspection != nil {
			intro++
		}
	}
	if intro > 1 {
		return fmt.Errorf("auth: only one issuer may configure introspection")
	}
	return nil
}

// Close stops what v runs in the background (key fetchers), if anything.
func Close(v Verifier) {
	if c, ok := v.(interface{ Close() }); ok {
		c.Close()
	}
}

func issuersOf(a config.Auth) []*config.JWTSettings {
	if len(a.Issuers) > 0 {
		return a.Issuers
	}
	if a.JWT != nil {
		return []*config.JWTSettings{a.JWT}
	}
	return nil
}

// newTransport is the HTTP transport to identity providers: the default
// one's settings (proxy from the environment, TLS), its own idle pool.
func newTransport() *http.Transport {
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		return dt.Clone()
	}
	return &http.Transport{Proxy: http.ProxyFromEnvironment}
}

// Close stops the key fetchers of the one-issuer verifier.
func (v *jwtVerifier) Close() { v.close() }

type issuersVerifier struct {
	byIssuer    map[string]*jwtVerifier
	only        *jwtVerifier // the one issuer, if one (its errors are precise)
	qualify     bool
	intro       *introspector
	introIssuer string
	ownIssuer   string // the gateway's own authorization server, if on
}

// Close stops every issuer's key fetcher and drops idle connections.
func (v *issuersVerifier) Close() {
	for _, jv := range v.byIssuer {
		jv.close()
	}
	if v.intro != nil {
		v.intro.hc.CloseIdleConnections()
	}
}

func (v *issuersVerifier) Verify(r *http.Request) (Principal, error) {
	p, _, err := v.VerifyClaims(r)
	return p, err
}

func (v *issuersVerifier) VerifyClaims(r *http.Request) (Principal, Claims, error) {
	raw, err := BearerToken(r)
	if err != nil {
		return "", nil, err
	}
	ctx := r.Context()
	iss, isJWT := unverifiedIssuer(raw)
	if jv := v.byIssuer[iss]; isJWT && jv != nil {
		sub, claims, err := jv.verify(ctx, raw)
		return v.principal(iss, sub), claims, err
	}
	switch {
	case v.intro != nil && (!isJWT || iss == ""):
		// Not a JWT naming another issuer: an opaque token (which may
		// hold dots), or a JWT without iss. A JWT naming an issuer
		// that is not trusted is never sent to the introspecting one.
		sub, claims, err := v.intro.verify(ctx, raw)
		return v.principal(v.introIssuer, sub), claims, err
	case v.only != nil:
		sub, claims, err := v.only.verify(ctx, raw)
		return v.principal(iss, sub), claims, err
	case isJWT:
		return "", nil, refusal(jwt.ErrTokenInvalidIssuer, "%s", issuerDetail(iss, v.trusted()))
	}
	return "", nil, refusal(jwt.ErrTokenMalformed, "%s", malformedDetail(nil))
}

// trusted lists the trusted issuers, sorted, for what a refusal says.
func (v *issuersVerifier) trusted() []string {
	return slices.Sorted(maps.Keys(v.byIssuer))
}

// principal is sub, qualified by its issuer with several issuers:
// "{iss}#{sub}", which no two (issuer, subject) pairs share, since no
// trusted issuer holds a '#' (Check): the first '#' ends the issuer. A
// subject is taken as it is ('#' included), so every principal made
// before stays the same.
func (v *issuersVerifier) principal(iss, sub string) Principal {
	if sub == "" {
		return ""
	}
	if v.qualify && iss != v.ownIssuer {
		return Principal(iss + "#" + sub)
	}
	return Principal(sub)
}

// unverifiedIssuer reads iss from a token shaped like a JWS (three
// segments, a JSON header and payload), without checking anything else:
// it only picks the keys the token is then verified with.
func unverifiedIssuer(raw string) (string, bool) {
	if strings.Count(raw, ".") != 2 {
		return "", false
	}
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
		return "", false
	}
	iss, _ := claims["iss"].(string)
	return iss, true
}

// withTiming replaces the key fetch timing (tests).
func withTiming(t keyTiming) Option { return func(o *options) { o.timing = t } }
