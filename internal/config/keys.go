package config

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// allAlgorithms are the JWS algorithms the gateway can verify.
var allAlgorithms = []string{
	"HS256", "HS384", "HS512",
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

func knownAlgorithm(alg string) bool { return slices.Contains(allAlgorithms, alg) }

// minRSABits is the smallest accepted RSA modulus.
const minRSABits = 2048

// KeyAlgorithms lists the algorithms the configured keys can verify: HS*
// for an HMAC secret; RS* and PS* for an RSA key; the one ES* matching an
// ECDSA key's curve; EdDSA for an Ed25519 key.
func (s *JWTSettings) KeyAlgorithms() []string {
	var out []string
	if len(s.HMACSecret) > 0 {
		out = append(out, "HS256", "HS384", "HS512")
	}
	out = append(out, PublicKeyAlgorithms(s.PublicKey)...)
	return out
}

// PublicKeyAlgorithms lists the JWS algorithms key can verify (none for
// nil or an unsupported key type).
func PublicKeyAlgorithms(key crypto.PublicKey) []string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []string{"ES256"}
		case elliptic.P384():
			return []string{"ES384"}
		case elliptic.P521():
			return []string{"ES512"}
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}
	}
	return nil
}

// loadPublicKey reads a PEM file holding one public key ("PUBLIC KEY" or
// "RSA PUBLIC KEY") or a certificate chain (the first certificate's key is
// used). Private keys are refused: the gateway only verifies.
func loadPublicKey(path string) (crypto.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("cannot read %s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("cannot read %s", path)
	}
	var key crypto.PublicKey
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return nil, fmt.Errorf("%s holds a private key: give the public key (or certificate) only", path)
		}
		var k crypto.PublicKey
		switch block.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			k, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			if key != nil {
				continue // rest of a chain
			}
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				k = cert.PublicKey
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: cannot parse %s block: %v", path, block.Type, err)
		}
		if key != nil {
			if block.Type != "CERTIFICATE" {
				return nil, fmt.Errorf("%s holds more than one public key", path)
			}
			continue
		}
		key = k
	}
	if key == nil {
		return nil, fmt.Errorf("%s holds no PEM public key or certificate", path)
	}
	if rk, ok := key.(*rsa.PublicKey); ok && rk.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("%s: RSA key has %d bits, at least %d are required", path, rk.N.BitLen(), minRSABits)
	}
	if len(PublicKeyAlgorithms(key)) == 0 {
		return nil, fmt.Errorf("%s: unsupported key type %T (want RSA, ECDSA P-256/P-384/P-521 or Ed25519)", path, key)
	}
	return key, nil
}
