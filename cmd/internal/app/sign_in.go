package app

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/mcpgw/gateway/handler/connect"
	"github.com/mcpgw/gateway/internal/config"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/usertokens"
	"github.com/mcpgw/gateway/store"
)

// signIn builds the user_oauth token source and sign-in pages when some
// backend uses user_oauth (config made sure public_url, user_tokens and
// auth.login are set then); both nil otherwise. The backends' settings
// are those of start-up: a reload that changes a user_oauth backend's
// authorization server takes effect at the next start.
func signIn(cfg *config.Config, st store.Store, log *slog.Logger) (http.Handler, credentials.UserTokenSource, error) {
	backends := map[[2]string]*credentials.Settings{}
	var order [][2]string
	for vh, v := range cfg.VirtualHosts {
		for key, b := range v.Backends {
			if b.Credentials != nil && b.Credentials.Grant == credentials.GrantUserOAuth {
				backends[[2]string{vh, key}] = b.Credentials
				order = append(order, [2]string{vh, key})
			}
		}
	}
	slices.SortFunc(order, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	if len(backends) == 0 || cfg.UserTokens == nil || cfg.Auth.Login == nil || cfg.Auth.JWT == nil {
		return nil, nil, nil
	}
	sealer, err := usertokens.NewSealer([]byte(cfg.UserTokens.Key.Reveal()))
	if err != nil {
		return nil, nil, fmt.Errorf("user_tokens: %w", err)
	}
	vault := usertokens.NewVault(st, sealer, cfg.PublicURL, log)
	h := connect.New(connect.Options{
		Vault: vault, Issuer: cfg.Auth.JWT.Issuer,
		ClientID: cfg.Auth.Login.ClientID, ClientSecret: cfg.Auth.Login.ClientSecret, Scopes: cfg.Auth.Login.Scopes,
		Backend:  func(vh, b string) *credentials.Settings { return backends[[2]string{vh, b}] },
		Backends: func() [][2]string { return order },
		Log:      log,
	})
	return h, vault, nil
}
