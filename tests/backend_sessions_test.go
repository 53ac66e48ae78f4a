package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// Backend sessions are never shared between principals (issue 36), on
// two gateway instances over one Redis: a stateful go-sdk backend with a
// tool that counts its calls per backend session and names the session
// (the backend's own view of its session ids).

// sessionCluster is two instances over a "demo" vhost of a stateful
// counting backend "counter" (its YAML options after the URL, e.g.
// "session: reuse") and a stateless backend "web". head replaces the
// config's first line (session_ttl).
func sessionCluster(t *testing.T, head, counterOpts string) (c *cluster, a, b *testsupport.GatewayProcess) {
	t.Helper()
	c = &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}, prefix: fmt.Sprintf("e%d", time.Now().UnixNano())}
	c.backends["counter"] = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "counter", SessionCounter: true})
	c.backends["web"] = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "web", Stateless: true})
	cfgHead := configHead()
	if head != "" {
		cfgHead = head + "\n" + cfgHead[strings.Index(cfgHead, "\n")+1:]
	}
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(fmt.Sprintf("%s  demo:\n    backends:\n      counter: {url: %q%s}\n      web: {url: %q}\n",
		cfgHead, c.backends["counter"].URL, counterOpts, c.backends["web"].URL))
	return c, c.start(), c.start()
}

// counted is one call of the counter: its count and backend session.
type counted struct {
	n       int
	session string
}

// count calls counter-count as a 2025 session (modern false) or as a
// 2026-07-28 client, through ep.
func count(t *testing.T, cl *testsupport.Client, ep testsupport.Endpoint, modern bool) counted {
	t.Helper()
	params := map[string]any{"name": "counter-count", "arguments": map[string]any{}}
	var r *testsupport.Reply
	if modern {
		r = cl.ModernRequest(ep, "tools/call", params, nil)
	} else {
		r = cl.Request(ep, "tools/call", params)
	}
	var c counted
	if _, err := fmt.Sscanf(r.Text(), "%d %s", &c.n, &c.session); err != nil || c.session == "" {
		t.Fatalf("counter-count answered %s", r.Body)
	}
	return c
}

// Sessionless callers get a backend session of their own per request,
// whatever the mode that keeps sessions for 2025 clients: two principals
// alternating over two instances never run in the same backend session,
// every count is 1, and each backend session is closed after its call.
func TestBackendSessions_SessionlessPrincipalsNeverShareOne(t *testing.T) {
	for _, mode := range []string{"", ", session: reuse", ", session: auto"} {
		t.Run(strings.TrimPrefix(mode, ", "), func(t *testing.T) {
			c, a, b := sessionCluster(t, "", mode)
			alice, bob := c.client("alice"), c.client("bob")
			seen := map[string]string{}
			for i := range 6 {
				ep := []testsupport.Endpoint{a, b}[i%2]
				for who, cl := range map[string]*testsupport.Client{"alice": alice, "bob": bob} {
					got := count(t, cl, ep, true)
					if got.n != 1 {
						t.Fatalf("%s's call %d counted %d in backend session %s: a session was reused", who, i, got.n, got.session)
					}
					if prev, ok := seen[got.session]; ok {
						t.Fatalf("backend session %s served %s and then %s", got.session, prev, who)
					}
					seen[got.session] = who
					if !c.backends["counter"].WaitDeleted(got.session, 10*time.Second) {
						t.Fatalf("%s's per-request backend session %s was never closed", who, got.session)
					}
				}
			}
		})
	}
}

// 2025 sessions of two principals: each gets its own backend session,
// kept across its calls on both instances (the default, auto, and reuse),
// so the backend's state reads 1, 2, 3 in each and never crosses over.
func TestBackendSessions_SessionsOfTwoPrincipalsNeverShareOne(t *testing.T) {
	for _, mode := range []string{"", ", session: reuse"} {
		name := strings.TrimPrefix(mode, ", ")
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			c, a, b := sessionCluster(t, "", mode)
			alice, bob := c.client("alice"), c.client("bob")
			alice.Initialize(a, nil)
			bob.Initialize(b, nil)
			sessions := map[string]string{}
			for i := 1; i <= 3; i++ {
				ep := []testsupport.Endpoint{a, b}[i%2]
				for who, cl := range map[string]*testsupport.Client{"alice": alice, "bob": bob} {
					got := count(t, cl, ep, false)
					if got.n != i {
						t.Fatalf("%s's call %d counted %d (backend session %s), want %d", who, i, got.n, got.session, i)
					}
					if s, ok := sessions[who]; ok && s != got.session {
						t.Fatalf("%s's session moved from backend session %s to %s", who, s, got.session)
					}
					sessions[who] = got.session
				}
			}
			if sessions["alice"] == sessions["bob"] {
				t.Fatalf("alice and bob share backend session %s", sessions["alice"])
			}
			// A client's DELETE closes its backend session.
			alice.Delete(b)
			if !c.backends["counter"].WaitDeleted(sessions["alice"], 10*time.Second) {
				t.Fatal("alice's backend session outlived her DELETE")
			}
		})
	}
}

// session: per-principal: every client of one principal (two 2025
// sessions and a sessionless caller, on either instance) shares one
// backend session; another principal has its own.
func TestBackendSessions_PerPrincipalSharesOnlyWithinOnePrincipal(t *testing.T) {
	c, a, b := sessionCluster(t, "", ", session: per-principal")
	alice1, alice2, bob := c.client("alice"), c.client("alice"), c.client("bob")
	alice1.Initialize(a, nil)
	alice2.Initialize(b, nil)
	bob.Initialize(a, nil)
	want := 0
	var aliceSession string
	for i, step := range []struct {
		cl     *testsupport.Client
		ep     testsupport.Endpoint
		modern bool
	}{{alice1, a, false}, {alice2, b, false}, {alice1, b, true}, {alice2, a, false}, {alice1, a, true}} {
		want++
		got := count(t, step.cl, step.ep, step.modern)
		if i == 0 {
			aliceSession = got.session
		}
		if got.n != want || got.session != aliceSession {
			t.Fatalf("alice's call %d counted %d in backend session %s, want %d in %s", i, got.n, got.session, want, aliceSession)
		}
	}
	for i, modern := range []bool{false, true, false} {
		got := count(t, bob, []testsupport.Endpoint{a, b}[i%2], modern)
		if got.session == aliceSession || got.n != i+1 {
			t.Fatalf("bob's call %d counted %d in backend session %s (alice's: %s)", i, got.n, got.session, aliceSession)
		}
	}
}

// A kept backend session the backend forgot is replaced, and the old one
// is closed; one whose gateway session expired is closed by the sweep on
// whichever instance runs it next.
func TestBackendSessions_ReplacedOrExpiredAreDeleted(t *testing.T) {
	c, a, b := sessionCluster(t, "session_ttl: 2s", "")
	backend := c.backends["counter"]
	alice := c.client("alice")
	alice.Initialize(a, nil)
	first := count(t, alice, b, false)
	// The backend drops the session (as one does on restart or its own
	// timeout): the next call opens another and the gateway closes the
	// old one at the backend.
	for ss := range backend.Server.Sessions() {
		if ss.ID() == first.session {
			ss.Close()
		}
	}
	second := count(t, alice, a, false)
	if second.session == first.session || second.n != 1 {
		t.Fatalf("after the backend forgot %s: counted %d in %s", first.session, second.n, second.session)
	}
	if !backend.WaitDeleted(first.session, 10*time.Second) {
		t.Fatalf("the replaced backend session %s was never closed", first.session)
	}
	if third := count(t, alice, b, false); third.session != second.session || third.n != 2 {
		t.Fatalf("the replacement was not kept: counted %d in %s", third.n, third.session)
	}
	// Alice goes quiet; her gateway session expires after 2 s. Other
	// traffic on either instance starts the sweep, which closes hers.
	bob := c.client("bob")
	bob.Initialize(b, nil)
	if !testsupport.Eventually(t, 30*time.Second, func() bool {
		count(t, bob, []testsupport.Endpoint{a, b}[time.Now().Second()%2], false)
		return backend.WaitDeleted(second.session, 500*time.Millisecond)
	}) {
		t.Fatalf("the backend session %s of an expired gateway session was never closed", second.session)
	}
}
