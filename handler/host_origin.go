package handler

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// checkHostOrigin rejects requests whose Host is not allowed (DNS
// rebinding: a browser tricked into calling a local gateway still sends the
// attacker's host name) and requests from browser origins not on the list.
// A same-origin request (Origin names the very scheme and host the request
// was sent to, the host already vetted by the Host check) is allowed too. Requests
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
				noteOf(w).setDetail("allowed_hosts: " + listed(hosts))
				writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, hostRefusal(r.Host))
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !allowedOrigin[strings.ToLower(o)] && !sameOrigin(o, requestScheme(r), r.Host) {
				noteOf(w).setDetail("allowed_origins: " + listed(origins))
				writeHTTPError(w, http.StatusForbidden, codeInvalidRequest, originRefusal(o))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// hostRefusal is the 403's message: it names the Host that was refused
// (cut to 100 bytes) and where the list is, since the usual cause is a
// client reaching the gateway by a name the config does not list (a
// port-forward's 127.0.0.1, a new ingress host).
func hostRefusal(host string) string {
	if len(host) > 100 {
		host = host[:100] + "…"
	}
	return fmt.Sprintf("host not allowed: %q is not on the config's allowed_hosts (add it, or send a Host header that is)", host)
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

// sameOrigin reports whether an Origin header names the request's own
// origin: its scheme and its Host. An origin is scheme, host and port; a
// page at http://gw.example (plain HTTP, which anyone on the path can
// rewrite) is not the origin of https://gw.example.
func sameOrigin(origin, scheme, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, host)
}

// requestScheme is the scheme the client used to reach the gateway: https
// when the connection is TLS, or when a proxy in front terminated TLS and
// says so in X-Forwarded-Proto (its first value), else http.
//
// The header is trusted as the gateway already trusts it for its own URL
// (resource_metadata.go), and it must be: behind a load balancer, an API
// gateway or a Lambda Function URL the connection is never TLS, and
// same-origin browser requests (Origin: https://...) would all be
// refused. Trusting it gives an attacker nothing: the Origin check stops
// browsers, and a browser page cannot add X-Forwarded-Proto to a
// cross-origin request without a CORS preflight, which the gateway never
// grants; a non-browser client can send any Origin anyway.
func requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); strings.EqualFold(strings.TrimSpace(p), "https") {
		return "https"
	}
	return "http"
}
