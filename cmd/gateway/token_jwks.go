package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// gateway token serve-jwks publishes a test key's JWK Set, and the
// OpenID discovery document that names it, on a loopback address only:
// the gateway's auth (issuer: the URL it prints) discovers the keys there
// exactly as it discovers a real provider's.

// runServeJWKS serves DIR/jwks.json until SIGINT or SIGTERM.
func runServeJWKS(args []string, stdout io.Writer) error {
	fs := tokenFlags("serve-jwks")
	dir := fs.String("dir", "mcpgw-test-keys", "`directory` keygen wrote (its jwks.json is served)")
	listen := fs.String("listen", defaultJWKSListen, "loopback `address` to listen on (127.0.0.1, ::1 or localhost); port 0 picks one")
	if help, err := parseTokenFlags(fs, args, stdout); help || err != nil {
		return err
	}
	if err := loopbackOnly(*listen); err != nil {
		return fmt.Errorf("token serve-jwks: --listen %s: %w", *listen, err)
	}
	set, err := os.ReadFile(filepath.Join(*dir, testJWKSFile))
	if err != nil {
		return fmt.Errorf("token serve-jwks: %w (run gateway token keygen --out %s first)", err, *dir)
	}
	if !json.Valid(set) {
		return fmt.Errorf("token serve-jwks: %s is not JSON", filepath.Join(*dir, testJWKSFile))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("token serve-jwks: --listen: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close() // "localhost" that resolved elsewhere
		return fmt.Errorf("token serve-jwks: --listen %s: refused: it listens on %s, not loopback", *listen, ln.Addr())
	}
	issuer := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: jwksHandler(issuer, set), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// Tests and scripts wait for this line, as for the gateway's.
	fmt.Fprintf(stdout, "mcpgw: listening on %s\nissuer %s, keys at %s/jwks.json (test keys only: loopback, tokens marked %s)\n"+
		"gateway config:\n  auth:\n    mode: jwt\n    jwt: {issuer: %q, audience: mcpgw}\n", issuer, issuer, issuer, testClaim, issuer)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// loopbackOnly refuses an address another host could reach: the host
// must be a loopback IP or "localhost" (an empty host is every interface).
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("refused: test keys are served on loopback only (127.0.0.1, ::1 or localhost), never where another host could fetch them")
}

// jwksHandler serves the set at /jwks.json and the discovery document at
// /.well-known/openid-configuration (and RFC 8414's path), naming issuer.
func jwksHandler(issuer string, set []byte) http.Handler {
	meta, _ := json.Marshal(map[string]any{
		"issuer": issuer, "jwks_uri": issuer + "/jwks.json",
		"id_token_signing_alg_values_supported": []string{"ES256", "RS256"},
		"response_types_supported":              []string{"token"},
		"subject_types_supported":               []string{"public"},
	})
	serve := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks.json", serve(set))
	mux.HandleFunc("GET /.well-known/openid-configuration", serve(meta))
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", serve(meta))
	return mux
}
