package testsupport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSRedis is a redis-server child process that accepts only TLS
// connections, on loopback, with a certificate from a throwaway CA: the
// shape of a managed Redis (ElastiCache in-transit encryption, ...) that a
// rediss:// URL points at.
type TLSRedis struct {
	// Addr is the server's TLS host:port (there is no plaintext port).
	Addr string
	// CAFile is the PEM file of the CA that signed the server certificate;
	// clients must trust it (for example through SSL_CERT_FILE).
	CAFile string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	client *redis.Client
	once   sync.Once
}

// The files StartTLSRedis writes into its dir.
const (
	tlsCAFile        = "ca.pem"
	tlsServerCert    = "server.pem"
	tlsServerKeyFile = "server-key.pem"
	tlsRedisLog      = "redis-tls.log"
)

// StartTLSRedis generates a CA and a server certificate for 127.0.0.1,
// ::1 and localhost (ECDSA P-256, valid for a day), writes ca.pem,
// server.pem and server-key.pem into dir, and starts redis-server with TLS
// only (--port 0 --tls-port <free port>, client certificates not required,
// persistence off, working directory and log in dir). It returns once the
// server answers PING over TLS, verified against the CA.
//
// dir belongs to the caller (a t.TempDir or a TestMain's os.MkdirTemp):
// Stop leaves it in place. Like StartRedis it takes no *testing.T, so a
// TestMain can start one server for a package. It needs a redis-server
// built with TLS support (Debian and Ubuntu's redis-server 6 and later is).
func StartTLSRedis(dir string) (*TLSRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("testsupport: redis-server is not installed (not found in PATH); " +
			"install it (e.g. apt-get install redis-server) to run the Redis TLS tests")
	}
	pool, err := writeTLSFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("testsupport: redis TLS certificates: %w", err)
	}
	// As in StartRedis: the free port is only free until someone else takes
	// it, so a server that exits straight away is retried on a new port.
	for attempt := 1; ; attempt++ {
		s, err := startTLSRedis(bin, dir, pool)
		if !errors.Is(err, errExited) || attempt == 3 {
			return s, err
		}
	}
}

func startTLSRedis(bin, dir string, pool *x509.CertPool) (*TLSRedis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, tlsRedisLog)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("testsupport: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	caFile := filepath.Join(dir, tlsCAFile)
	cmd := exec.Command(bin,
		"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", filepath.Join(dir, tlsServerCert),
		"--tls-key-file", filepath.Join(dir, tlsServerKeyFile),
		"--tls-ca-cert-file", caFile,
		"--tls-auth-clients", "no",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testsupport: start redis-server: %w", err)
	}
	s := &TLSRedis{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		CAFile: caFile,
		cmd:    cmd,
		exited: make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(s.exited) }()
	// The readiness client trusts the CA explicitly, so it never loads the
	// process' system roots (which a caller may still be about to point at
	// CAFile through SSL_CERT_FILE: Go reads that once, on first use).
	s.client = redis.NewClient(&redis.Options{
		Addr: s.Addr,
		TLSConfig: &tls.Config{
			RootCAs:    pool,
			ServerName: "127.0.0.1",
			MinVersion: tls.VersionTLS12,
		},
	})

	if err := s.waitReady(); err != nil {
		log, _ := os.ReadFile(logPath)
		s.Stop()
		return nil, fmt.Errorf("testsupport: redis-server (TLS) on %s: %w; its log:\n%s", s.Addr, err, log)
	}
	return s, nil
}

// waitReady polls PING over TLS until the server answers.
func (s *TLSRedis) waitReady() error { return waitForPing(s.client, s.exited) }

// URL is the server's rediss:// URL. The host is the IP address the
// certificate names, so go-redis verifies it against the IP SAN.
func (s *TLSRedis) URL() string { return "rediss://" + s.Addr }

// Stop kills the server and waits for it to exit. It is safe to call more
// than once. The files in dir are left to their owner.
func (s *TLSRedis) Stop() {
	s.once.Do(func() {
		_ = s.client.Close()
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

// writeTLSFiles generates the CA and the server certificate, writes them
// (and the server key, mode 0600) into dir, and returns a pool holding the
// CA.
func writeTLSFiles(dir string) (*x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "mcpgw testsupport throwaway CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: randomSerial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create server certificate: %w", err)
	}
	srvKeyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, err
	}

	files := []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{tlsCAFile, "CERTIFICATE", caDER, 0o644},
		{tlsServerCert, "CERTIFICATE", srvDER, 0o644},
		{tlsServerKeyFile, "PRIVATE KEY", srvKeyDER, 0o600},
	}
	for _, f := range files {
		data := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), data, f.mode); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}

// randomSerial returns a random 128-bit certificate serial number.
func randomSerial() *big.Int {
	// crypto/rand.Int never fails on Go 1.24+ (rand.Reader cannot fail).
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}
