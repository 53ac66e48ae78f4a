// Package tlsstore_test runs the Redis store against a real redis-server
// that accepts only TLS, with a certificate from a throwaway CA, the way
// managed Redis (ElastiCache in-transit encryption, ...) is reached through
// a rediss:// URL. It proves the store works over TLS end to end, not just
// that the URL parses.
//
// It is a package of its own because the store has no TLS option beyond
// the URL: go-redis verifies rediss:// servers against the system roots.
// The test CA joins them through SSL_CERT_FILE, which crypto/x509 reads
// once, when the system pool is first used; TestMain sets it before
// anything in this test binary touches TLS. In the store package that
// would depend on every other test of the package.
package tlsstore_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
)

// tlsRedis is the TLS-only redis-server shared by the tests of the package.
var tlsRedis *testsupport.TLSRedis

// untrustedChildEnv, when set, makes the test binary act as the child of
// TestStore_RejectsUntrustedServerCertificate: it holds the rediss:// URL
// to ping with a trust store that lacks the test CA.
const untrustedChildEnv = "TLSSTORE_UNTRUSTED_CHILD_URL"

// Exit codes of the untrusted child.
const (
	childUnknownAuthority = 0 // Ping failed on certificate verification: expected
	childOtherError       = 1
	childPingSucceeded    = 2
)

// wait bounds every network wait of these tests. It is a failure timeout,
// not a synchronisation delay.
const wait = 10 * time.Second

func TestMain(m *testing.M) {
	if url := os.Getenv(untrustedChildEnv); url != "" {
		os.Exit(untrustedChild(url))
	}
	if testsupport.Short() {
		fmt.Println("skipped under -short: every test here runs processes")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tlsstore-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlsstore:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	tlsRedis, err = testsupport.StartTLSRedis(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tlsRedis.Stop()
	// Before the first use of the system roots (StartTLSRedis verifies with
	// an explicit pool, so it did not load them).
	if err := os.Setenv("SSL_CERT_FILE", tlsRedis.CAFile); err != nil {
		fmt.Fprintln(os.Stderr, "tlsstore:", err)
		return 1
	}
	if err := checkSystemRootsTrust(tlsRedis.CAFile); err != nil {
		fmt.Fprintln(os.Stderr, "tlsstore:", err)
		return 1
	}
	return m.Run()
}

// checkSystemRootsTrust verifies the CA in caFile against the system roots,
// so that a pool loaded before SSL_CERT_FILE was set fails here, with the
// reason, instead of as a puzzling Ping error in every test.
func checkSystemRootsTrust(caFile string) error {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return fmt.Errorf("%s holds no PEM block", caFile)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	if _, err := ca.Verify(x509.VerifyOptions{}); err != nil {
		return fmt.Errorf("the system roots do not trust the test CA although SSL_CERT_FILE=%s "+
			"(were they loaded before TestMain set it?): %w", caFile, err)
	}
	return nil
}

func newTLSStore(t *testing.T) *store.Redis {
	t.Helper()
	s, err := store.NewRedis(tlsRedis.URL(), store.RedisOptions{KeyPrefix: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// TestStore_WorksOverTLS runs the store contract's main operations on the
// TLS-only server: the session hash (scripts, MULTI), the pub/sub bus
// connection, the event log stream and the stream claim all go over TLS.
func TestStore_WorksOverTLS(t *testing.T) {
	ctx := timeout(t)
	s := newTLSStore(t)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping %s: %v", tlsRedis.URL(), err)
	}

	const id = "tls-session-1"
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	want := &store.Session{
		ID: id, Principal: "alice", VHost: "mcp.example.com", ProtocolVersion: "2025-06-18",
		ClientInfo:         json.RawMessage(`{"name":"cli","version":"1.0"}`),
		ClientCapabilities: json.RawMessage(`{"roots":{"listChanged":true}}`),
		LogLevel:           "info",
		CreatedAt:          at,
		Backends: map[string]*store.BackendSnapshot{
			"github": {Key: "github", ProbedAt: at, ProtocolVersion: "2025-06-18",
				Capabilities: json.RawMessage(`{"tools":{}}`), ServerInfo: json.RawMessage(`{"name":"gh"}`),
				SessionID: "up-1"},
			"down": {Key: "down", ProbedAt: at, Error: "connection refused", Stateless: true},
		},
		Subscriptions: []string{"file:///a", "gh://repo/b"},
		Cancelled:     map[string]bool{"41": true},
		Pending:       map[store.ServerRequestID]string{"gw-0": s.InstanceID()},
	}
	if err := s.CreateSession(ctx, want, time.Minute); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	load := func() *store.Session {
		t.Helper()
		got, err := s.LoadSession(ctx, id, time.Minute)
		if err != nil {
			t.Fatalf("LoadSession: %v", err)
		}
		return got
	}
	if got := load(); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", got, want)
	}

	up := &store.BackendSnapshot{Key: "down", ProbedAt: at.Add(time.Second), ProtocolVersion: "2025-06-18",
		Capabilities: json.RawMessage(`{"prompts":{}}`)}
	if err := s.PutBackends(ctx, id, []*store.BackendSnapshot{up}, time.Minute); err != nil {
		t.Fatalf("PutBackends: %v", err)
	}
	if got := load().Backends; !reflect.DeepEqual(got["down"], up) || !reflect.DeepEqual(got["github"], want.Backends["github"]) {
		t.Errorf("backends after PutBackends = %+v, want down replaced and github kept", got)
	}

	// The bus has a pub/sub connection of its own: over TLS too.
	msgs := make(chan store.BusMessage, 16)
	stop, err := s.Subscribe(t.Context(), func(m store.BusMessage) { msgs <- m })
	if err != nil {
		t.Fatalf("Subscribe over TLS: %v", err)
	}
	defer stop()
	cancel := store.BusMessage{Kind: store.BusCancel, Session: id, ID: "7", Data: json.RawMessage(`{"reason":"user"}`)}
	if err := s.MarkCancelled(ctx, id, "7", cancel, time.Minute, time.Minute); err != nil {
		t.Fatalf("MarkCancelled: %v", err)
	}
	wantMsg := cancel
	wantMsg.From = s.InstanceID()
	select {
	case got := <-msgs:
		if !reflect.DeepEqual(got, wantMsg) {
			t.Errorf("bus message = %+v, want %+v", got, wantMsg)
		}
	case <-time.After(wait):
		t.Fatalf("no bus message within %v of MarkCancelled", wait)
	}
	if c := load().Cancelled; !c["7"] || !c["41"] {
		t.Errorf("Cancelled = %v, want 7 marked beside 41", c)
	}

	var ids []store.EventID
	for i := range 3 {
		eid, err := s.AppendEvent(ctx, id, fmt.Appendf(nil, `{"n":%d}`, i), 100, time.Minute)
		if err != nil {
			t.Fatalf("AppendEvent %d: %v", i, err)
		}
		ids = append(ids, eid)
	}
	evs, err := s.EventsAfter(ctx, id, ids[0], 0)
	if err != nil {
		t.Fatalf("EventsAfter: %v", err)
	}
	wantEvs := []store.Event{{ID: ids[1], Data: []byte(`{"n":1}`)}, {ID: ids[2], Data: []byte(`{"n":2}`)}}
	if !reflect.DeepEqual(evs, wantEvs) {
		t.Errorf("EventsAfter(%s) = %q, want %q", ids[0], evs, wantEvs)
	}
	if latest, err := s.LatestEventID(ctx, id); err != nil || latest != ids[2] {
		t.Errorf("LatestEventID = %q, %v; want %q", latest, err, ids[2])
	}

	if prev, err := s.ClaimStream(ctx, id, "owner-a", time.Minute); err != nil || prev != "" {
		t.Errorf("first ClaimStream = %q, %v; want no previous holder", prev, err)
	}
	if prev, err := s.ClaimStream(ctx, id, "owner-b", time.Minute); err != nil || prev != "owner-a" {
		t.Errorf("second ClaimStream = %q, %v; want previous holder owner-a", prev, err)
	}

	key, err := s.SigningKey(ctx, "tls-test", nil)
	if err != nil || len(key) != 32 {
		t.Errorf("SigningKey = %d bytes, %v; want 32 bytes", len(key), err)
	}

	if err := s.DeleteSession(ctx, id); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := s.LoadSession(ctx, id, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadSession after DeleteSession: err = %v, want ErrNotFound", err)
	}
	if evs, err := s.EventsAfter(ctx, id, "0-0", 0); err != nil || len(evs) != 0 {
		t.Errorf("EventsAfter after DeleteSession = %q, %v; want none", evs, err)
	}
	if err := s.DeleteSession(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteSession: err = %v, want ErrNotFound", err)
	}
}

// TestStore_TLSByHostName reaches the server as rediss://localhost:<port>,
// so the certificate is verified against its DNS name rather than its IP
// address, as with a managed Redis endpoint's host name.
func TestStore_TLSByHostName(t *testing.T) {
	url := strings.Replace(tlsRedis.URL(), "127.0.0.1", "localhost", 1)
	s, err := store.NewRedis(url, store.RedisOptions{KeyPrefix: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Ping(timeout(t)); err != nil {
		t.Fatalf("Ping %s: %v", url, err)
	}
}

// TestStore_PlaintextURLOnTLSPortFails checks that a redis:// URL (no TLS)
// pointed at the TLS port fails promptly with a connection error rather
// than hanging until a timeout: the server drops a client that does not
// start a TLS handshake.
func TestStore_PlaintextURLOnTLSPortFails(t *testing.T) {
	url := "redis://" + strings.TrimPrefix(tlsRedis.URL(), "rediss://")
	s, err := store.NewRedis(url, store.RedisOptions{KeyPrefix: "tls"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })

	ctx := timeout(t)
	start := time.Now()
	err = s.Ping(ctx)
	if err == nil {
		t.Fatalf("Ping with plaintext %s on the TLS port succeeded", url)
	}
	t.Logf("Ping with plaintext %s after %v: %v", url, time.Since(start).Round(time.Millisecond), err)
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("Ping with plaintext %s ran into the %v test timeout instead of failing: %v", url, wait, err)
	}
	if !strings.HasPrefix(err.Error(), "store: ping redis: ") {
		t.Errorf("error %q does not say which operation failed", err)
	}
	if !strings.Contains(err.Error(), "rediss://") {
		t.Errorf("error %q does not suggest rediss://", err)
	}
}

// TestStore_RejectsUntrustedServerCertificate checks that rediss:// really
// verifies the server: with a trust store lacking the test CA, Ping fails
// on the certificate. This process already trusts the CA (the system pool
// is loaded once per process), so the check runs in a child: this test
// binary again, with SSL_CERT_FILE and SSL_CERT_DIR naming an empty file
// and an empty directory.
func TestStore_RejectsUntrustedServerCertificate(t *testing.T) {
	dir := t.TempDir()
	emptyFile := filepath.Join(dir, "no-roots.pem")
	if err := os.WriteFile(emptyFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyDir := filepath.Join(dir, "no-roots.d")
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	// Later entries win: these override the SSL_CERT_FILE TestMain set.
	cmd.Env = append(os.Environ(),
		untrustedChildEnv+"="+tlsRedis.URL(),
		"SSL_CERT_FILE="+emptyFile,
		"SSL_CERT_DIR="+emptyDir)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		t.Fatalf("start child %s: %v", os.Args[0], err)
	}
	code := cmd.ProcessState.ExitCode()
	t.Logf("child (exit %d): %s", code, strings.TrimSpace(string(out)))
	switch {
	case ctx.Err() != nil:
		t.Fatalf("child did not finish within %v: %v", 3*wait, err)
	case code == childPingSucceeded:
		t.Fatal("Ping succeeded although the server's CA is not trusted: the certificate was not verified")
	case code != childUnknownAuthority:
		t.Fatalf("child failed in an unexpected way (%v): %s", err, out)
	}
}

// untrustedChild is the child of TestStore_RejectsUntrustedServerCertificate.
// It reports through its exit code whether Ping failed on certificate
// verification, and prints the Ping error.
func untrustedChild(url string) int {
	s, err := store.NewRedis(url, store.RedisOptions{KeyPrefix: "tls"})
	if err != nil {
		fmt.Println("NewRedis:", err)
		return childOtherError
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = s.Ping(ctx)
	fmt.Println("Ping:", err)
	var unknown x509.UnknownAuthorityError
	switch {
	case err == nil:
		return childPingSucceeded
	case errors.As(err, &unknown):
		return childUnknownAuthority
	default:
		return childOtherError
	}
}
