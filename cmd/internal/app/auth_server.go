package app

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/mcpgw/gateway/handler"
	"github.com/mcpgw/gateway/handler/auth"
	"github.com/mcpgw/gateway/handler/authserver"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/usertokens"
	"github.com/mcpgw/gateway/store"
)

// authServer builds the gateway's own authorization server when
// auth.authorization_server is on (config made sure public_url,
// auth.jwt, auth.login and user_tokens are set then), and the option
// that makes the resource side trust its tokens; nil, nil otherwise.
func authServer(cfg *config.Config, st store.Store, rt *router.Router, log *slog.Logger) (*authserver.Server, []auth.Option, error) {
	as := cfg.Auth.AuthorizationServer
	if as == nil {
		return nil, nil, nil
	}
	sealer, err := usertokens.NewSealer([]byte(cfg.UserTokens.Key.Reveal()))
	if err != nil {
		return nil, nil, fmt.Errorf("user_tokens: %w", err)
	}
	var configured []string
	if rm := cfg.Auth.ResourceMetadata; rm != nil {
		configured = rm.ScopesSupported
	}
	s, err := authserver.New(authserver.Options{
		Issuer: cfg.PublicURL, Store: st, Sealer: sealer, Settings: as,
		Upstream: cfg.Auth.JWT.Issuer, ClientID: cfg.Auth.Login.ClientID, ClientSecret: cfg.Auth.Login.ClientSecret,
		LoginScopes: cfg.Auth.Login.Scopes,
		HasVHost:    rt.HasVHost,
		Scopes: func() []string {
			out := slices.Clone(configured)
			for _, sc := range rt.AllAccessScopes() {
				if !slices.Contains(out, sc) {
					out = append(out, sc)
				}
			}
			return out
		},
		ClientAddr: handler.ClientAddr(cfg.Audit.TrustedProxies),
		Log:        log,
	})
	if err != nil {
		return nil, nil, err
	}
	return s, []auth.Option{auth.WithOwnIssuer(auth.OwnIssuer{Issuer: s.Issuer(), Key: s.PublicKey})}, nil
}
