// Package connect serves the per-user sign-in pages of user_oauth
// backends on public_url: /oauth/connect (a connect link), the one
// redirect URI /oauth/callback, and /oauth/connections (list and
// disconnect). The browser first signs in at the gateway's own issuer
// (OIDC, auth.login) so the gateway knows who opened the link; then it
// is sent to the backend's authorization server (authorization code
// with PKCE S256) and its tokens are sealed into the store
// (router/usertokens). Every step's state travels sealed in the OAuth
// state parameter and a browser-binding cookie, so any instance serves
// any step. Pages are plain HTML and redirects: no JavaScript.
package connect

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/router/usertokens"
)

// Options configure the pages.
type Options struct {
	Vault *usertokens.Vault
	// Issuer is the gateway's own OpenID provider (auth.jwt.issuer).
	Issuer string
	// ClientID, ClientSecret and Scopes are auth.login.
	ClientID     string
	ClientSecret credentials.Secret
	Scopes       []string
	// Backend returns a user_oauth backend's settings, nil for one that
	// is not (or no longer) configured.
	Backend func(vhost, backend string) *credentials.Settings
	// Backends lists every user_oauth backend as vhost and key.
	Backends func() [][2]string
	Log      *slog.Logger
}

// Cookie names. flowCookie binds a flow's states to the browser that
// started it (login CSRF: a state carried to another browser is
// refused); sessionCookie is the connections page's short session.
const (
	flowCookie    = "mcpgw_flow"
	sessionCookie = "mcpgw_conn"
	cookiePath    = "/oauth"
	sessionLife   = 15 * time.Minute
)

// Handler serves the three endpoints.
type Handler struct {
	o      Options
	secure bool

	mu       sync.Mutex
	provider *oidc.Provider // the gateway's issuer, discovered on first use
	mux      *http.ServeMux
}

// ServeHTTP serves the three endpoints (mount the handler at /oauth/).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// New returns the pages' handler; mount it at /oauth/.
func New(o Options) *Handler {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	h := &Handler{o: o, secure: strings.HasPrefix(o.Vault.PublicURL, "https://"), mux: http.NewServeMux()}
	h.Register(h.mux)
	return h
}

// Register mounts the endpoints on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /oauth/connect", h.connect)
	mux.HandleFunc("GET /oauth/callback", h.callback)
	mux.HandleFunc("GET /oauth/connections", h.connections)
	mux.HandleFunc("POST /oauth/connections", h.disconnect)
}

// state is what a flow carries through the authorization servers,
// sealed: its step, who it is for, the browser it is bound to, and the
// login nonce or the PKCE verifier.
type state struct {
	ID        string    `json:"i"`
	Step      string    `json:"s"` // stepLogin | stepBackend | stepConnections
	Principal string    `json:"p,omitempty"`
	VHost     string    `json:"v,omitempty"`
	Backend   string    `json:"b,omitempty"`
	Browser   string    `json:"w"`
	Nonce     string    `json:"n,omitempty"`
	Verifier  string    `json:"k,omitempty"`
	Exp       time.Time `json:"x"`
}

const (
	stepLogin       = "login"
	stepBackend     = "backend"
	stepConnections = "connections"
)

func (h *Handler) loginConfig(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	h.mu.Lock()
	p := h.provider
	h.mu.Unlock()
	if p == nil {
		var err error
		p, err = oidc.NewProvider(h.o.Vault.CtxClient(context.WithoutCancel(ctx)), h.o.Issuer)
		if err != nil {
			return nil, nil, err
		}
		h.mu.Lock()
		h.provider = p
		h.mu.Unlock()
	}
	conf := &oauth2.Config{
		ClientID: h.o.ClientID, ClientSecret: h.o.ClientSecret.Reveal(), RedirectURL: h.o.Vault.RedirectURL(),
		Endpoint: p.Endpoint(), Scopes: h.o.Scopes,
	}
	return conf, p.Verifier(&oidc.Config{ClientID: h.o.ClientID}), nil
}

// connect opens a connect link: refused (4xx page, nothing stored) when
// tampered, expired or used; else consumed and the browser sent to the
// gateway's issuer to say who it is.
func (h *Handler) connect(w http.ResponseWriter, r *http.Request) {
	link, err := h.o.Vault.OpenLink(r.URL.Query().Get("l"))
	if err != nil {
		h.page(w, http.StatusBadRequest, "This sign-in link is not valid", "It may have expired or been altered. Ask your client for the tool again: it will give you a new link.")
		return
	}
	if h.o.Backend(link.VHost, link.Backend) == nil {
		h.page(w, http.StatusNotFound, "Unknown backend", "This gateway no longer signs in to that backend.")
		return
	}
	first, err := h.o.Vault.Store.UseOnce(r.Context(), "link/"+link.ID, usertokens.LinkLifetime)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	if !first {
		h.page(w, http.StatusGone, "This sign-in link was already used", "Each link works once. Ask your client for the tool again: it will give you a new link.")
		return
	}
	h.startLogin(w, r, state{Step: stepLogin, Principal: link.Principal, VHost: link.VHost, Backend: link.Backend, Exp: link.Exp})
}

// startLogin binds a new flow to this browser and sends it to the
// gateway's issuer.
func (h *Handler) startLogin(w http.ResponseWriter, r *http.Request, st state) {
	conf, _, err := h.loginConfig(r.Context())
	if err != nil {
		h.o.Log.Warn("sign-in: the gateway's issuer cannot be reached", "error", err)
		h.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach its identity provider. Try again later.")
		return
	}
	browser := usertokens.RandomID()
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: browser, Path: cookiePath, HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(usertokens.LinkLifetime / time.Second)})
	st.ID, st.Browser, st.Nonce = usertokens.RandomID(), h.o.Vault.Sealer.Digest("browser", browser), usertokens.RandomID()
	st.Verifier = oauth2.GenerateVerifier() // PKCE at the gateway's issuer too
	http.Redirect(w, r, conf.AuthCodeURL(h.seal(st), oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

func (h *Handler) seal(st state) string {
	b, _ := json.Marshal(st)
	return h.o.Vault.Sealer.SealString("state", "", b)
}

// openState opens a callback's state: sealed by us, not expired, bound
// to this browser, used once.
func (h *Handler) openState(r *http.Request) (state, int, string) {
	var st state
	b, err := h.o.Vault.Sealer.OpenString("state", "", r.URL.Query().Get("state"))
	if err != nil || json.Unmarshal(b, &st) != nil || st.ID == "" {
		return st, http.StatusBadRequest, "This sign-in cannot be completed: its state is not valid."
	}
	if !time.Now().Before(st.Exp) {
		return st, http.StatusBadRequest, "This sign-in took too long. Ask your client for the tool again."
	}
	c, err := r.Cookie(flowCookie)
	if err != nil || h.o.Vault.Sealer.Digest("browser", c.Value) != st.Browser {
		return st, http.StatusBadRequest, "This sign-in was started in another browser. Open the link again in this one."
	}
	first, err := h.o.Vault.Store.UseOnce(r.Context(), "state/"+st.ID, time.Until(st.Exp)+time.Second)
	if err != nil {
		return st, http.StatusServiceUnavailable, "The gateway cannot complete sign-ins right now. Try again later."
	}
	if !first {
		return st, http.StatusBadRequest, "This sign-in step was already completed."
	}
	return st, 0, ""
}

// callback is the one redirect URI: it finishes whichever step the
// state names.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	st, status, msg := h.openState(r)
	if status != 0 {
		h.page(w, status, "Sign-in failed", msg)
		return
	}
	if msg := h.checkIss(r, st); msg != "" {
		h.o.Log.Warn("sign-in refused: the authorization response names another issuer (RFC 9207)", "vhost", st.VHost, "backend", st.Backend)
		h.page(w, http.StatusBadRequest, "Sign-in failed", msg)
		return
	}
	if e := r.URL.Query().Get("error"); e != "" {
		h.page(w, http.StatusForbidden, "Sign-in was not completed", "The authorization server answered: "+truncate(e, 64)+".")
		return
	}
	code := r.URL.Query().Get("code")
	if code == "" {
		h.page(w, http.StatusBadRequest, "Sign-in failed", "The authorization server sent no code.")
		return
	}
	switch st.Step {
	case stepLogin, stepConnections:
		h.loginDone(w, r, st, code)
	case stepBackend:
		h.backendDone(w, r, st, code)
	default:
		h.page(w, http.StatusBadRequest, "Sign-in failed", "Unknown step.")
	}
}

// checkIss is the mix-up defence of RFC 9207: an authorization
// response that names its issuer must name the one the step was sent to,
// and one whose server advertises authorization_response_iss_parameter_supported
// must name it. It returns why the response is refused, or "".
func (h *Handler) checkIss(r *http.Request, st state) string {
	iss := r.URL.Query().Get("iss")
	var want string
	var required bool
	switch st.Step {
	case stepBackend:
		s := h.o.Backend(st.VHost, st.Backend)
		if s == nil {
			return ""
		}
		e, err := h.o.Vault.Endpoints(r.Context(), s)
		if err != nil {
			return ""
		}
		want, required = e.Issuer, e.IssParameter
	default:
		want = h.o.Issuer
		h.mu.Lock()
		p := h.provider
		h.mu.Unlock()
		var md struct {
			IssParameter bool `json:"authorization_response_iss_parameter_supported"`
		}
		if p != nil && p.Claims(&md) == nil {
			required = md.IssParameter
		}
	}
	switch {
	case want == "":
		return ""
	case iss == "" && required:
		return "The authorization server's answer does not name it, though it says it always does."
	case iss != "" && iss != want:
		return "The answer came from another authorization server than the one this sign-in was sent to."
	}
	return ""
}

// loginDone checks who signed in at the gateway's issuer. For a connect
// link, a subject other than the link's principal is refused before the
// browser ever reaches the third party.
func (h *Handler) loginDone(w http.ResponseWriter, r *http.Request, st state, code string) {
	sub, ok := h.verifyLogin(w, r, st, code)
	if !ok {
		return
	}
	if st.Step == stepConnections {
		h.startSession(w, r, sub)
		return
	}
	if sub != st.Principal {
		h.o.Log.Info("sign-in refused: the browser's user is not the link's", "vhost", st.VHost, "backend", st.Backend)
		h.page(w, http.StatusForbidden, "This link is for another user", "You signed in as someone other than the user this link was made for. Nothing was connected.")
		return
	}
	s := h.o.Backend(st.VHost, st.Backend)
	if s == nil {
		h.page(w, http.StatusNotFound, "Unknown backend", "This gateway no longer signs in to that backend.")
		return
	}
	e, err := h.o.Vault.Endpoints(r.Context(), s)
	if err != nil {
		h.o.Log.Warn("sign-in: the backend's authorization server cannot be discovered", "vhost", st.VHost, "backend", st.Backend, "error", err)
		h.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach the backend's authorization server. Try again later.")
		return
	}
	next := state{ID: usertokens.RandomID(), Step: stepBackend, Principal: st.Principal, VHost: st.VHost, Backend: st.Backend,
		Browser: st.Browser, Verifier: oauth2.GenerateVerifier(), Exp: st.Exp}
	conf := usertokens.OAuth2Config(s, e, h.o.Vault.RedirectURL())
	http.Redirect(w, r, conf.AuthCodeURL(h.seal(next), oauth2.S256ChallengeOption(next.Verifier)), http.StatusFound)
}

// verifyLogin exchanges the gateway issuer's code and verifies the ID
// token (signature, issuer, audience, expiry, nonce); it writes the
// refusal page itself.
func (h *Handler) verifyLogin(w http.ResponseWriter, r *http.Request, st state, code string) (string, bool) {
	conf, verifier, err := h.loginConfig(r.Context())
	if err != nil {
		h.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach its identity provider. Try again later.")
		return "", false
	}
	tok, err := conf.Exchange(h.o.Vault.CtxClient(r.Context()), code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		h.o.Log.Info("sign-in: the login code was refused", "error_class", classify(err))
		h.page(w, http.StatusBadGateway, "Sign-in failed", "The identity provider refused the sign-in.")
		return "", false
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := verifier.Verify(r.Context(), raw)
	if err != nil || idt.Nonce != st.Nonce || st.Nonce == "" {
		h.page(w, http.StatusForbidden, "Sign-in failed", "The identity provider's answer could not be verified.")
		return "", false
	}
	return idt.Subject, true
}

// backendDone exchanges the backend's code with the PKCE verifier and
// seals the tokens into the store.
func (h *Handler) backendDone(w http.ResponseWriter, r *http.Request, st state, code string) {
	s := h.o.Backend(st.VHost, st.Backend)
	if s == nil {
		h.page(w, http.StatusNotFound, "Unknown backend", "This gateway no longer signs in to that backend.")
		return
	}
	e, err := h.o.Vault.Endpoints(r.Context(), s)
	if err != nil {
		h.page(w, http.StatusBadGateway, "Sign-in is unavailable", "The gateway cannot reach the backend's authorization server.")
		return
	}
	conf := usertokens.OAuth2Config(s, e, h.o.Vault.RedirectURL())
	tok, err := conf.Exchange(h.o.Vault.CtxClient(r.Context()), code, oauth2.VerifierOption(st.Verifier))
	if err != nil || tok.AccessToken == "" {
		h.o.Log.Info("sign-in: the backend's code was refused", "vhost", st.VHost, "backend", st.Backend, "error_class", classify(err))
		h.page(w, http.StatusBadGateway, "Sign-in failed", "The backend's authorization server refused the sign-in.")
		return
	}
	ut := usertokens.Token{Access: tok.AccessToken, Refresh: tok.RefreshToken, Type: tok.TokenType, Expiry: tok.Expiry}
	if err := h.o.Vault.Put(r.Context(), st.Principal, st.VHost, st.Backend, ut); err != nil {
		h.unavailable(w, err)
		return
	}
	h.o.Log.Info("user connected a backend", "vhost", st.VHost, "backend", st.Backend)
	h.page(w, http.StatusOK, "Connected", "The gateway is now connected to "+st.Backend+" for you. You can close this window and go back to your client.")
}

func (h *Handler) unavailable(w http.ResponseWriter, err error) {
	h.o.Log.Warn("sign-in: store unavailable", "error", err)
	h.page(w, http.StatusServiceUnavailable, "Sign-in is unavailable", "The gateway cannot complete sign-ins right now. Try again later.")
}

func classify(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return "oauth error " + truncate(re.ErrorCode, 64)
	}
	if err == nil {
		return "no access token"
	}
	return "request failed"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{- if .Rows}}<table>{{range .Rows}}<tr><td>{{.Name}}</td><td>{{if .Connected}}connected{{else}}not connected{{end}}</td><td>{{if .Connected}}<form method="post" action="connections"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="backend" value="{{.Name}}"><button type="submit">Disconnect</button></form>{{end}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))

type row struct {
	Name      string
	Connected bool
}

type pageData struct {
	Title, Text, CSRF string
	Rows              []row
}

func (h *Handler) page(w http.ResponseWriter, status int, title, text string) {
	h.render(w, status, pageData{Title: title, Text: text})
}

func (h *Handler) render(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, d)
}
