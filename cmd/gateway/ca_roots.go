package main

// The minimal container image is FROM scratch: no /etc/ssl, so the
// system has no root certificates, and every https backend, identity
// provider, OTLP collector and rediss:// store would fail with "x509:
// certificate signed by unknown authority". This import bundles the Go
// project's copy of the Mozilla root set and uses it only where the system
// has none: on a host or image with its own roots (or SSL_CERT_FILE /
// SSL_CERT_DIR set), those win. It adds about 250 KB.
import _ "golang.org/x/crypto/x509roots/fallback"
