package authserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpgw/gateway/store"
)

// Dynamic client registration (RFC 7591), for clients that bring no
// metadata document. Anyone may register, so everything is bounded: a
// body of at most 16 KiB, at most 10 redirect URIs of at most 2000 bytes
// each, a name of at most 200 bytes, 20 registrations an hour per source
// address (all instances: the store counts), and a registration no token
// was issued to expires after a day. A public client (none) proves
// itself with PKCE alone; a confidential one gets a secret, kept only as
// a keyed digest. The answer holds only fields the client sent or the
// server set, never empty strings (MCP SDKs' schemas refuse those).

const (
	maxRegistrationBytes = 16 << 10
	registrationsPerHour = 20
)

type registration struct {
	RedirectURIs []string `json:"redirect_uris"`
	Name         string   `json:"client_name"`
	AuthMethod   string   `json:"token_endpoint_auth_method"`
	GrantTypes   []string `json:"grant_types"`
	ResponseType []string `json:"response_types"`
	Scope        string   `json:"scope"`
}

type registered struct {
	ClientID              string   `json:"client_id"`
	ClientSecret          string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt      int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt *int64   `json:"client_secret_expires_at,omitempty"`
	ClientName            string   `json:"client_name,omitempty"`
	RedirectURIs          []string `json:"redirect_uris"`
	GrantTypes            []string `json:"grant_types"`
	ResponseTypes         []string `json:"response_types"`
	AuthMethod            string   `json:"token_endpoint_auth_method"`
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if !s.o.Settings.DynamicRegistration {
		oauthError(w, http.StatusNotFound, "invalid_request", "dynamic client registration is off: use a client ID metadata document")
		return
	}
	if !s.admitRegistration(w, r) {
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRegistrationBytes+1))
	if err != nil || len(body) > maxRegistrationBytes {
		oauthError(w, http.StatusRequestEntityTooLarge, "invalid_client_metadata", fmt.Sprintf("the registration is larger than %d bytes", maxRegistrationBytes))
		return
	}
	var reg registration
	if err := json.Unmarshal(body, &reg); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the registration is not a JSON object of RFC 7591 client metadata")
		return
	}
	c, code, msg := s.newClient(reg)
	if code != "" {
		oauthError(w, http.StatusBadRequest, code, msg)
		return
	}
	var secret string
	if c.Method != authNone {
		secret = randomID() + randomID()
		c.Secret = s.rec.digest("client-secret", secret)
	}
	if err := s.rec.put(r.Context(), kindClient, c.ID, c, unusedClientLife); err != nil {
		s.o.Log.Warn("authorization server: a registration could not be stored", "error", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the gateway cannot register clients right now")
		return
	}
	out := registered{ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.Created.Unix(), ClientName: c.Name,
		RedirectURIs: c.Redirects, GrantTypes: c.Grants, ResponseTypes: []string{"code"}, AuthMethod: c.Method}
	if secret != "" {
		never := int64(0)
		out.ClientSecretExpiresAt = &never
	}
	s.o.Log.Info("authorization server: client registered", "client_id", c.ID, "public", secret == "")
	writeJSON(w, http.StatusCreated, out)
}

// newClient checks a registration; code is the RFC 7591 error when it is
// refused.
func (s *Server) newClient(reg registration) (c *client, code, msg string) {
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
		return nil, "invalid_redirect_uri", fmt.Sprintf("redirect_uris: give 1 to %d", maxRedirectURIs)
	}
	for i, u := range reg.RedirectURIs {
		if p := redirectURIProblem(u); p != "" {
			return nil, "invalid_redirect_uri", "redirect_uris[" + strconv.Itoa(i) + "] " + p
		}
	}
	if len(reg.Name) > 200 {
		return nil, "invalid_client_metadata", "client_name: at most 200 bytes"
	}
	method := reg.AuthMethod
	switch method {
	case "":
		method = authBasic // RFC 7591's default
	case authNone, authBasic, authPost:
	default:
		return nil, "invalid_client_metadata", "token_endpoint_auth_method: none, client_secret_basic or client_secret_post"
	}
	grants := []string{grantCode, grantRenew}
	if len(reg.GrantTypes) > 0 {
		grants = nil
		for _, g := range reg.GrantTypes {
			switch g {
			case grantCode, grantRenew:
				if !contains(grants, g) {
					grants = append(grants, g)
				}
			default:
				return nil, "invalid_client_metadata", "grant_types: authorization_code and refresh_token only"
			}
		}
		if !contains(grants, grantCode) {
			return nil, "invalid_client_metadata", "grant_types: authorization_code is required"
		}
	}
	for _, rt := range reg.ResponseType {
		if rt != "code" {
			return nil, "invalid_client_metadata", "response_types: code only"
		}
	}
	return &client{ID: "mcpgw-" + randomID(), Name: reg.Name, Redirects: reg.RedirectURIs, Method: method,
		Grants: grants, Created: time.Now().Truncate(time.Second), s: s}, "", ""
}

// admitRegistration counts a registration against its source's hourly
// allowance, in the store; over it, 429 with Retry-After.
func (s *Server) admitRegistration(w http.ResponseWriter, r *http.Request) bool {
	src := "unknown"
	if s.o.ClientAddr != nil {
		src = s.o.ClientAddr(r)
	}
	v, err := s.o.Store.TakeRate(r.Context(), "oauth-register", []store.RateCheck{{
		Key: s.rec.digest("register-source", src), Limit: registrationsPerHour, Window: time.Hour}})
	if err != nil {
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the gateway cannot register clients right now")
		return false
	}
	if !v.Allowed {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(v.RetryAfter/time.Second)+1, 10))
		oauthError(w, http.StatusTooManyRequests, "invalid_request", fmt.Sprintf("at most %d registrations an hour from one address", registrationsPerHour))
		return false
	}
	return true
}

// preflight answers a browser client's CORS preflight of registration.
func (s *Server) preflight(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	w.WriteHeader(http.StatusNoContent)
}

// oauthError writes an OAuth error answer.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeJSONPublic writes a cacheable public document.
func writeJSONPublic(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
