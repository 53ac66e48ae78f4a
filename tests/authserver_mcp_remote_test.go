package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// mcp-remote 0.15.1, unmodified, as a desktop MCP client runs it: a
// stdio server the go-sdk client talks to, which signs in to the vhost
// through the gateway. Its "browser" is a script on PATH (and BROWSER)
// that writes each URL it is asked to open to a file; the test opens
// them as the person would, and the redirect reaches mcp-remote's own
// callback server.
func TestAuthServer_MCPRemote(t *testing.T) {
	node, dir := interopNode(t, "mcp-remote")
	r := startAuthServer(t, "10s")
	stub := t.TempDir()
	urls := filepath.Join(stub, "urls.txt")
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" >> " + urls + "\nexit 0\n"
	for _, name := range []string{"xdg-open", "browser"} {
		if err := os.WriteFile(filepath.Join(stub, name), []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	browse := startScriptedBrowser(t, r.browser("alice", "ops"), urls)
	connect := func(vhost, configDir string) *mcp.ClientSession {
		t.Helper()
		cmd := exec.Command(node, filepath.Join(dir, "dist", "proxy.js"), r.resource(vhost), fmt.Sprint(testsupport.FreePort(t)), "--allow-http")
		cmd.Env = append(os.Environ(), "MCP_REMOTE_CONFIG_DIR="+configDir, "BROWSER="+filepath.Join(stub, "browser"),
			"PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"))
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop-client", Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("mcp-remote for %s: %v", vhost, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	echo := func(cs *mcp.ClientSession, text string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("echo %q: %v %+v", text, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	a := connect("a", dirA)
	if got := echo(a, "hi"); got != "hi" {
		t.Fatalf("echo on a: %q", got)
	}
	b := connect("b", dirB)
	if tools, err := b.ListTools(t.Context(), nil); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools on b: %v %v", err, tools)
	}
	if n := browse.count(); n != 2 {
		t.Fatalf("%d sign-ins for two vhosts, want 2", n)
	}
	// Refresh: past the access token's life mcp-remote refreshes on its
	// own; nobody is asked to sign in again.
	time.Sleep(16 * time.Second) // the tokens' life: no signal exists for an expiry
	if got := echo(a, "again"); got != "again" || browse.count() != 2 {
		t.Fatalf("after expiry: %q, %d sign-ins", got, browse.count())
	}
	// Revocation of the grant mcp-remote holds: once its access token
	// expires, its refresh fails and it asks the person to sign in again.
	rt, clientID := mcpRemoteGrant(t, dirA)
	if st, _ := r.postForm("/oauth2/revoke", url.Values{"token": {rt}, "client_id": {clientID}}); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	time.Sleep(16 * time.Second)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
		done <- err
	}()
	if !testsupport.Eventually(t, 90*time.Second, func() bool { return browse.count() >= 3 }) {
		t.Fatal("no new sign-in after the revocation")
	}
	<-done // the call that met the revocation: it may fail or succeed after the new sign-in
	if got := echo(a, "after"); got != "after" {
		t.Fatalf("after the new sign-in: %q", got)
	}
	if errs := browse.errors(); len(errs) > 0 {
		t.Fatalf("browser: %v", errs)
	}
	asNoSecrets(t, r, []string{rt, asLoginSecret, asKeyB64})
}

// mcpRemoteGrant reads the refresh token and client id mcp-remote keeps.
func mcpRemoteGrant(t *testing.T, configDir string) (refresh, clientID string) {
	t.Helper()
	_ = filepath.WalkDir(configDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		var v struct {
			RefreshToken string `json:"refresh_token"`
			ClientID     string `json:"client_id"`
		}
		_ = json.Unmarshal(b, &v)
		switch {
		case strings.HasSuffix(p, "_tokens.json"):
			refresh = v.RefreshToken
		case strings.HasSuffix(p, "_client_info.json"):
			clientID = v.ClientID
		}
		return nil
	})
	if refresh == "" || clientID == "" {
		t.Fatalf("no grant in %s", configDir)
	}
	return refresh, clientID
}

// scriptedBrowser opens every URL the stub browser script records, in
// order, as the person would.
type scriptedBrowser struct {
	opened chan struct{}
	fail   chan error
	n      int
}

func startScriptedBrowser(t *testing.T, b *browser, file string) *scriptedBrowser {
	sb := &scriptedBrowser{opened: make(chan struct{}, 64), fail: make(chan error, 64)}
	ctx := t.Context()
	go func() {
		seen := 0
		tick := time.NewTicker(100 * time.Millisecond) // the script leaves a file: no signal but its content
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			data, _ := os.ReadFile(file)
			lines := strings.Fields(string(data))
			for ; seen < len(lines); seen++ {
				if err := openInBrowser(b, lines[seen]); err != nil {
					sb.fail <- err
				}
				sb.opened <- struct{}{}
			}
		}
	}()
	return sb
}

// count is how many URLs were opened so far.
func (sb *scriptedBrowser) count() int {
	for {
		select {
		case <-sb.opened:
			sb.n++
		default:
			return sb.n
		}
	}
}

func (sb *scriptedBrowser) errors() []error {
	var out []error
	for {
		select {
		case err := <-sb.fail:
			out = append(out, err)
		default:
			return out
		}
	}
}

// openInBrowser is browser.visit without failing the test (it runs on
// the browser's goroutine): sign-in, consent, and the redirect to the
// client's callback.
func openInBrowser(b *browser, u string) error {
	if !strings.Contains(u, "/oauth2/authorize?") {
		return fmt.Errorf("asked to open %q, not the gateway's authorization endpoint", u)
	}
	resp, err := b.hc.Get(u)
	if err != nil {
		return err
	}
	for range 3 {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := formCSRFRE.FindStringSubmatch(string(data))
		if m == nil {
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("authorization ended with %d: %.200s", resp.StatusCode, data)
			}
			return nil
		}
		id, act := formIDRE.FindStringSubmatch(string(data)), formActRE.FindStringSubmatch(string(data))
		if resp, err = b.hc.PostForm(act[1], url.Values{"id": {id[1]}, "csrf": {m[1]}, "approve": {"yes"}}); err != nil {
			return err
		}
	}
	return errors.New("consent asked more than twice")
}
