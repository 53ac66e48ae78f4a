package authserver

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// The gateway's own consent page: before a client gets a token for a
// vhost in a user's name, the user sees the client's name, where its
// answer goes (the redirect URI's host) and the vhost, and approves, once
// per user, client, vhost and redirect URI (the MCP security guidance
// asks this of a proxy that signs users in at a third party: without it
// any client could ride the user's session at the identity provider).
// The form is bound to the flow's browser cookie and carries a token
// derived from it; the code is issued only by the approval, in the same
// request (the library's unauthenticated callback is not mounted).

func (s *Server) consentKey(a *authRequest) string {
	return s.rec.digest("consent", a.Subject+"\x00"+a.ClientID+"\x00"+a.Resource+"\x00"+a.RedirectURI)
}

// afterSignIn shows the consent page, or answers the client at once when
// the user approved this client before.
func (s *Server) afterSignIn(w http.ResponseWriter, r *http.Request, a *authRequest) {
	var seen bool
	if _, err := s.rec.get(r.Context(), kindConsent, s.consentKey(a), &seen); err == nil && seen {
		a.Approved = true
	}
	if err := s.rec.put(r.Context(), kindRequest, a.ID, a, authRequestLifeLeft(a)); err != nil {
		s.unavailable(w, err)
		return
	}
	if a.Approved {
		s.issueCode(w, r, a)
		return
	}
	http.Redirect(w, r, s.o.Issuer+pathConsent+"?id="+url.QueryEscape(a.ID), http.StatusFound)
}

// issueCode answers the client with a code (the library's response).
func (s *Server) issueCode(w http.ResponseWriter, r *http.Request, a *authRequest) {
	ctx := op.ContextWithIssuer(r.Context(), s.o.Issuer)
	op.AuthResponse(a, authorizer{Provider: s.provider, s: s}, w, r.WithContext(ctx))
}

// flowRequest finds the authorization request a consent form or page is
// for, signed in, in this browser; "" msg when it is.
func (s *Server) flowRequest(r *http.Request, id string) (*authRequest, string, string) {
	a, err := s.authRequest(r.Context(), id)
	if err != nil || !a.Authenticated || a.Approved {
		return nil, "", "This sign-in expired or was already completed. Start again from your MCP client."
	}
	c, err := r.Cookie(flowCookie)
	if err != nil || s.rec.digest("browser", c.Value) != a.Browser {
		return nil, "", "This sign-in was started in another browser."
	}
	return a, s.rec.digest("consent-form", c.Value+"\x00"+a.ID), ""
}

func (s *Server) consentPage(w http.ResponseWriter, r *http.Request) {
	a, csrf, msg := s.flowRequest(r, r.URL.Query().Get("id"))
	if msg != "" {
		s.page(w, http.StatusForbidden, "Sign-in failed", msg)
		return
	}
	c, err := s.lookupClient(r.Context(), a.ClientID)
	if err != nil {
		s.page(w, http.StatusBadRequest, "Sign-in failed", "The client is no longer registered.")
		return
	}
	host := a.RedirectURI
	if u, err := url.Parse(a.RedirectURI); err == nil && u.Host != "" {
		host = u.Host
	}
	name := c.Name
	if name == "" {
		name = "An unnamed client"
	}
	vhost := strings.TrimSuffix(strings.TrimPrefix(a.Resource, s.o.Issuer+"/servers/"), "/mcp")
	var scopes []string
	for _, sc := range a.Scopes {
		if sc != "offline_access" && sc != "openid" {
			scopes = append(scopes, sc)
		}
	}
	s.render(w, http.StatusOK, pageData{Title: "Allow access?", Consent: &consentData{
		ID: a.ID, CSRF: csrf, Client: name, ClientID: c.ID, Host: host, VHost: vhost, Scopes: strings.Join(scopes, " "), Action: s.o.Issuer + pathConsent}})
}

func (s *Server) consentAnswer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, "Sign-in failed", "The form could not be read.")
		return
	}
	a, csrf, msg := s.flowRequest(r, r.PostForm.Get("id"))
	if msg != "" {
		s.page(w, http.StatusForbidden, "Sign-in failed", msg)
		return
	}
	if got := r.PostForm.Get("csrf"); got == "" || got != csrf {
		s.page(w, http.StatusForbidden, "Sign-in failed", "The form did not come from this sign-in.")
		return
	}
	if r.PostForm.Get("approve") != "yes" {
		s.deny(w, r, a, "access_denied")
		return
	}
	if err := s.rec.put(r.Context(), kindConsent, s.consentKey(a), true, s.o.Settings.RefreshTokenTTL); err != nil {
		s.unavailable(w, err)
		return
	}
	a.Approved = true
	if err := s.rec.put(r.Context(), kindRequest, a.ID, a, authRequestLifeLeft(a)); err != nil {
		s.unavailable(w, err)
		return
	}
	s.o.Log.Info("authorization server: a user approved a client", "client_id", a.ClientID)
	s.issueCode(w, r, a)
}

type consentData struct {
	ID, CSRF, Client, ClientID, Host, VHost, Scopes, Action string
}

type pageData struct {
	Title, Text string
	Consent     *consentData
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1>{{if .Text}}<p>{{.Text}}</p>{{end}}
{{- with .Consent}}
<p><strong>{{.Client}}</strong> (<code>{{.ClientID}}</code>) asks to use the MCP server <strong>{{.VHost}}</strong> in your name.</p>
<p>Its answer goes to <strong>{{.Host}}</strong>.{{if .Scopes}} It asks for: <code>{{.Scopes}}</code>.{{end}}</p>
<form method="post" action="{{.Action}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="approve" value="yes">Allow</button> <button type="submit" name="approve" value="no">Deny</button></form>
{{- end}}
</body></html>
`))

func (s *Server) page(w http.ResponseWriter, status int, title, text string) {
	s.render(w, status, pageData{Title: title, Text: text})
}

func (s *Server) render(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, d)
}
