package handler

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// checkHostOrigin rejects requests whose Host is not allowed (DNS
// rebinding: a browser tricked into calling a local gateway still sends the
// attacker's host name) and requests from browser origins not on the list.
// A same-origin request (Origin names the very host the request was sent
// to, which the Host check has already vetted) is allowed too. Requests
// without an Origin header (non-browser clients) pass the origin check.
func checkHostOrigin(hosts, origins []string) func(http.Handler) http.Handler {
	allowedHost := map[string]bool{}
	for _, h := range hosts {
		allowedHost[strings.ToLower(h)] = true
	}
	allowedOrigin := map[string]bool{}
	for _, o := range origins {
		allowedOrigin[strings.ToLower(strings.TrimRight(o, "/"))] = true
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(allowedHost) > 0 && !hostAllowed(allowedHost, r.Host) {
				writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, "host not allowed")
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !allowedOrigin[strings.ToLower(o)] && !sameOrigin(o, r.Host) {
				writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, "origin not allowed")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// hostAllowed matches the Host header with or without its port: an entry
// "localhost" allows "localhost:8080", an entry "example.com:443" only that.
func hostAllowed(allowed map[string]bool, host string) bool {
	host = strings.ToLower(host)
	if allowed[host] {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return allowed[h] || allowed[strings.Trim(h, "[]")]
	}
	return allowed[strings.Trim(host, "[]")]
}

// sameOrigin reports whether an Origin header names the request's Host.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
