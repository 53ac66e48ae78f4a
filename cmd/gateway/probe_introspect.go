package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/internal/config"
)

// An issuer's RFC 7662 introspection endpoint is asked about every opaque
// token, and nothing at start-up asks it anything: a wrong URL or client
// secret would refuse every caller. check --probe sends it one made-up
// token through a verifier built from the config, so the request is the
// one the gateway sends; "not active" means the endpoint answered and
// took the client, anything else is what the first caller would meet.

// probeToken is the opaque token no issuer issued (no dots: never a JWT).
const probeToken = "mcpgw-check-probe-not-a-token"

// probeIntrospections starts a probe on wg for each issuer that
// introspects (config allows one).
func probeIntrospections(wg *sync.WaitGroup, cfg *config.Config, timeout time.Duration, rep *probeReport) {
	list := cfg.Auth.Issuers
	if list == nil && cfg.Auth.JWT != nil {
		list = []*config.JWTSettings{cfg.Auth.JWT}
	}
	for _, s := range list {
		if s.Introspection != nil {
			wg.Go(func() { probeIntrospection(s, timeout, rep) })
		}
	}
}

func probeIntrospection(s *config.JWTSettings, timeout time.Duration, rep *probeReport) {
	name := "introspection " + redactURL(s.Introspection.URL) + " (issuer " + redactURL(s.Issuer) + ")"
	v, err := auth.New(config.Auth{Mode: config.ModeJWT, JWT: s}, auth.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		rep.fail("%s: %v", name, err)
		return
	}
	defer auth.Close(v)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://mcpgw-check.invalid/mcp", nil)
	if err != nil {
		rep.fail("%s: %v", name, err)
		return
	}
	req.Header.Set("Authorization", "Bearer "+probeToken)
	_, err = v.Verify(req)
	f := auth.FailureOf(err)
	switch {
	case err == nil:
		rep.fail("%s: a made-up token was accepted as active: the endpoint is not checking tokens", name)
	case f.Class == auth.ClassInactive:
		rep.ok("%s: answers and says a made-up token is not active%s", name, clientNote(s.Introspection))
	default:
		rep.fail("%s: %s%s", name, timeoutSays(shorten(f.Detail), ctx, timeout), secretHint(s.Introspection))
	}
}

func clientNote(in *config.Introspection) string {
	if in.ClientID == "" {
		return " (no client authentication configured)"
	}
	return ", client " + in.ClientID + " accepted"
}

func secretHint(in *config.Introspection) string {
	if in.ClientID == "" {
		return " (check the issuer's introspection.url)"
	}
	return " (check the issuer's introspection.url, client_id " + in.ClientID + " and the secret in " + in.SecretEnv + ")"
}
