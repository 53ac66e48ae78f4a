package hydra

import (
	"net/http"
	"net/url"
	"strings"
)

// loginApp is Hydra's login and consent UI for tests: it signs the
// browser in as the subject its SubjectCookie names (no cookie: 403, so
// a test never signs someone in by accident) and grants every scope and
// audience asked for. It answers with redirects only.
type loginApp struct{ admin, cookie string }

func (a *loginApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/login":
		c, err := r.Cookie(a.cookie)
		if err != nil || c.Value == "" {
			http.Error(w, "login app: no "+a.cookie+" cookie: the test names no subject", http.StatusForbidden)
			return
		}
		ch := r.URL.Query().Get("login_challenge")
		a.accept(w, r, "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(ch),
			map[string]any{"subject": c.Value, "remember": false})
	case "/consent":
		ch := r.URL.Query().Get("consent_challenge")
		var req struct {
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		if err := adminJSON(r.Context(), http.MethodGet, a.admin+"/admin/oauth2/auth/requests/consent?consent_challenge="+url.QueryEscape(ch), nil, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body := map[string]any{"grant_scope": req.Scope, "grant_access_token_audience": req.Audience, "remember": false}
		if c, err := r.Cookie(a.cookie + "_groups"); err == nil && c.Value != "" {
			// The ID token carries the groups the test named (SetGroups).
			body["session"] = map[string]any{"id_token": map[string]any{"groups": strings.Split(c.Value, ".")}}
		}
		a.accept(w, r, "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(ch), body)
	default:
		http.NotFound(w, r)
	}
}

func (a *loginApp) accept(w http.ResponseWriter, r *http.Request, path string, body any) {
	var out struct {
		RedirectTo string `json:"redirect_to"`
	}
	if err := adminJSON(r.Context(), http.MethodPut, a.admin+path, body, &out); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, out.RedirectTo, http.StatusFound)
}
