package main

import (
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/lambdaurl"
)

// withURLCookies puts a Function URL request's cookies back into its
// Cookie header. Function URL events (payload 2.0) carry the browser's
// cookies in their own `cookies` list, not in the headers, and lambdaurl
// does not copy them back (it does send Set-Cookie as the response's
// cookies): without this the user_oauth sign-in pages (handler/connect)
// would never see the cookie that binds a flow to its browser.
func withURLCookies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ev, ok := lambdaurl.RequestFromContext(r.Context()); ok && len(ev.Cookies) > 0 && r.Header.Get("Cookie") == "" {
			r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
		}
		next.ServeHTTP(w, r)
	})
}
