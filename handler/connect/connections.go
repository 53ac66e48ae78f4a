package connect

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router/usertokens"
)

// session is the connections page's sealed cookie: who signed in, until
// when.
type session struct {
	Principal string    `json:"p"`
	Exp       time.Time `json:"x"`
}

// startSession sets the session cookie after a login for the
// connections page and sends the browser back to it.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, principal string) {
	b, _ := json.Marshal(session{Principal: principal, Exp: time.Now().Add(sessionLife)})
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: h.o.Vault.Sealer.SealString("session", "", b), Path: cookiePath,
		HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(sessionLife / time.Second)})
	http.Redirect(w, r, h.o.Vault.PublicURL+"/oauth/connections", http.StatusSeeOther)
}

func (h *Handler) session(r *http.Request) (session, string, bool) {
	var s session
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return s, "", false
	}
	b, err := h.o.Vault.Sealer.OpenString("session", "", c.Value)
	if err != nil || json.Unmarshal(b, &s) != nil || !time.Now().Before(s.Exp) {
		return s, "", false
	}
	return s, h.o.Vault.Sealer.Digest("csrf", c.Value), true
}

// connections lists the signed-in user's user_oauth backends, connected
// or not, each connected one with a disconnect button; without a
// session the browser signs in first.
func (h *Handler) connections(w http.ResponseWriter, r *http.Request) {
	s, csrf, ok := h.session(r)
	if !ok {
		h.startLogin(w, r, state{Step: stepConnections, Exp: time.Now().Add(usertokens.LinkLifetime)})
		return
	}
	names, err := h.o.Vault.Names(r.Context(), s.Principal)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	connected := map[string]bool{}
	for _, n := range names {
		connected[n] = true
	}
	d := pageData{Title: "Your connections", Text: "Backends the gateway calls with your own authorization.", CSRF: csrf}
	for _, b := range h.o.Backends() {
		n := usertokens.Name(b[0], b[1])
		d.Rows = append(d.Rows, row{Name: n, Connected: connected[n]})
	}
	h.render(w, http.StatusOK, d)
}

// disconnect revokes a connection at its provider (RFC 7009, when it has
// a revocation endpoint) and deletes it.
func (h *Handler) disconnect(w http.ResponseWriter, r *http.Request) {
	s, csrf, ok := h.session(r)
	if !ok {
		h.page(w, http.StatusUnauthorized, "Sign in first", "Open the connections page again to sign in.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("csrf") != csrf {
		h.page(w, http.StatusForbidden, "Not allowed", "This form is stale. Open the connections page again.")
		return
	}
	vhost, backend, _ := strings.Cut(r.PostForm.Get("backend"), "/")
	set := h.o.Backend(vhost, backend)
	if set == nil {
		h.page(w, http.StatusNotFound, "Unknown backend", "No such connection.")
		return
	}
	tok, ok, err := h.o.Vault.Get(r.Context(), s.Principal, vhost, backend)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	if ok {
		if err := h.o.Vault.Revoke(r.Context(), set, tok); err != nil {
			h.o.Log.Warn("disconnect: revocation at the provider failed; the token is deleted anyway", "vhost", vhost, "backend", backend, "error", err)
		}
		if err := h.o.Vault.Delete(r.Context(), s.Principal, vhost, backend); err != nil {
			h.unavailable(w, err)
			return
		}
		h.o.Log.Info("user disconnected a backend", "vhost", vhost, "backend", backend)
	}
	http.Redirect(w, r, h.o.Vault.PublicURL+"/oauth/connections", http.StatusSeeOther)
}
