package router_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/credentials"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Backend session ids are bearer-like: the store never holds one in clear
// (backend_session_ids.go). These tests read the fixture's Redis keys
// directly, whatever structure the store gives them.

// callAs runs one request of session sid on f's instance for principal, as
// the handler does once it has verified the caller's token.
func callAs(t *testing.T, f *fixture, sid store.SessionID, principal, method string, params string) *jsonrpc.Response {
	t.Helper()
	sess := f.Instance.Load(t, sid)
	ctx, done := f.Sessions.Track(credentials.WithCaller(context.Background(), credentials.Caller{Principal: principal}), sess, mustID(7))
	defer done()
	return f.Router.Handle(ctx, &router.Call{Caller: &router.SessionCaller{Session: sess, Runtime: f.Sessions},
		Request: &jsonrpc.Request{ID: mustID(7), Method: method, Params: []byte(params)}})
}

// storeDump is every value under the fixture's key prefix, keys included.
func storeDump(t *testing.T, f *fixture) string {
	t.Helper()
	return redisSrv.Dump(t, f.Prefix+"*")
}

// liveIDs are the ids of the backend sessions backend key keeps open.
func liveIDs(f *fixture, key string) []string {
	var ids []string
	for ss := range f.Backends[key].Server.Sessions() {
		ids = append(ids, ss.ID())
	}
	return ids
}

// After a reuse backend's calls and a per-principal backend's, indexed
// for the sweep, the store names each kept backend
// session only sealed.
func TestSealedBackendSessionIDs_NoClearIDInTheStore(t *testing.T) {
	f := newFixture(t,
		backendSpec{Key: "r", Adjust: func(b *router.Backend) { b.Session = router.SessionReuse }},
		backendSpec{Key: "pp", Adjust: func(b *router.Backend) { b.Session = router.SessionPerPrincipal }})
	sid, _ := f.Initialize(nil)
	for _, tool := range []string{"r-increment", "pp-increment", "r-increment", "pp-increment"} {
		result(t, callAs(t, f, sid, "alice", "tools/call", `{"name":"`+tool+`"}`))
	}
	dump := storeDump(t, f)
	for _, key := range []string{"r", "pp"} {
		ids := liveIDs(f, key)
		if len(ids) == 0 {
			t.Fatalf("backend %s keeps no session: nothing was tested", key)
		}
		for _, id := range ids {
			if strings.Contains(dump, id) {
				t.Errorf("the store holds backend %s's session id %q in clear", key, id)
			}
		}
	}
	// Sealed ids are there: the snapshot, the principal's record, and
	// the index naming both.
	if n := strings.Count(dump, "mcpgw-sealed-v1."); n < 4 {
		t.Fatalf("%d sealed ids in the store, want at least 4:\n%s", n, dump)
	}
	// And they are used: the reuse backend shook hands once.
	if n := f.Backends["r"].Count("initialize"); n != 1 {
		t.Fatalf("reuse backend saw %d initialize requests, want 1", n)
	}
}

// A snapshot the previous version wrote names its backend session in
// clear: that session is still sent on, with no new handshake, and a
// session that replaces it is stored sealed.
func TestSealedBackendSessionIDs_ClearLegacyIDStillReused(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "r", Adjust: func(b *router.Backend) { b.Session = router.SessionReuse }}, backendSpec{Key: "p"})
	sid, _ := f.Initialize(nil)
	b := f.Backends["r"]
	ids := liveIDs(f, "r")
	if len(ids) != 1 {
		t.Fatalf("backend sessions after initialize: %v", ids)
	}
	legacy := *f.Instance.Load(t, sid).Backends["r"]
	legacy.SessionID = store.BackendSessionID(ids[0])
	if err := f.Store.PutBackends(t.Context(), sid, []*store.BackendSnapshot{&legacy}, time.Hour); err != nil {
		t.Fatal(err)
	}
	inits := b.Count("initialize")
	for range 2 {
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	}
	if b.Count("initialize") != inits || !slices.Equal(liveIDs(f, "r"), ids) {
		t.Fatalf("the clear id was not reused: %d handshakes, sessions %v", b.Count("initialize")-inits, liveIDs(f, "r"))
	}
	// The backend forgets it: the new session is stored sealed.
	for ss := range b.Server.Sessions() {
		ss.Close()
	}
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	stored := f.Instance.Load(t, sid).Backends["r"].SessionID
	if !strings.HasPrefix(string(stored), "mcpgw-sealed-v1.") {
		t.Fatalf("the replacing session is stored as %q", stored)
	}
}

// A stored id that looks sealed but does not open (another key, tampered
// with) is no kept session: the call succeeds on a fresh backend session,
// which replaces it.
func TestSealedBackendSessionIDs_UnopenableIDMeansAFreshSession(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "r", Adjust: func(b *router.Backend) { b.Session = router.SessionReuse }}, backendSpec{Key: "p"})
	sid, _ := f.Initialize(nil)
	b := f.Backends["r"]
	bad := *f.Instance.Load(t, sid).Backends["r"]
	bad.SessionID = "mcpgw-sealed-v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if err := f.Store.PutBackends(t.Context(), sid, []*store.BackendSnapshot{&bad}, time.Hour); err != nil {
		t.Fatal(err)
	}
	inits := b.Count("initialize")
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	if b.Count("initialize") != inits+1 {
		t.Fatalf("%d handshakes, want one", b.Count("initialize")-inits)
	}
	if stored := f.Instance.Load(t, sid).Backends["r"].SessionID; stored == bad.SessionID || !strings.HasPrefix(string(stored), "mcpgw-sealed-v1.") {
		t.Fatalf("stored after the call: %q", stored)
	}
}

// A principal's record the previous version wrote names its backend
// session in clear: that session is still used, and the record's
// compare-and-swap, given the clear id as read, replaces it with a sealed
// one when the backend forgets it.
func TestSealedBackendSessionIDs_ClearLegacyPrincipalRecord(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "pp", Adjust: func(b *router.Backend) { b.Session = router.SessionPerPrincipal }}, backendSpec{Key: "p"})
	sid, _ := f.Initialize(nil)
	result(t, callAs(t, f, sid, "alice", "tools/call", `{"name":"pp-increment"}`))
	b := f.Backends["pp"]
	ids := liveIDs(f, "pp")
	if len(ids) != 1 {
		t.Fatalf("backend sessions: %v", ids)
	}
	// The record's name, as the router derives it (backend_session_owner.go).
	sum := sha256.Sum256([]byte(f.VHost + "\x00pp\x00alice"))
	owner := "p" + hex.EncodeToString(sum[:16])
	sealedID, err := f.Store.PrincipalBackendSession(t.Context(), owner, time.Hour)
	if err != nil || !strings.HasPrefix(string(sealedID), "mcpgw-sealed-v1.") {
		t.Fatalf("principal record: %q %v", sealedID, err)
	}
	if now, err := f.Store.SwapPrincipalBackendSession(t.Context(), owner, sealedID, store.BackendSessionID(ids[0]), time.Hour); err != nil || now != store.BackendSessionID(ids[0]) {
		t.Fatalf("writing the legacy record: %q %v", now, err)
	}
	inits := b.Count("initialize")
	result(t, callAs(t, f, sid, "alice", "tools/call", `{"name":"pp-increment"}`))
	if b.Count("initialize") != inits || !slices.Equal(liveIDs(f, "pp"), ids) {
		t.Fatalf("the clear id was not reused: %d handshakes, sessions %v", b.Count("initialize")-inits, liveIDs(f, "pp"))
	}
	for ss := range b.Server.Sessions() {
		ss.Close()
	}
	result(t, callAs(t, f, sid, "alice", "tools/call", `{"name":"pp-increment"}`))
	if b.Count("initialize") != inits+1 {
		t.Fatalf("%d handshakes after the backend forgot, want one", b.Count("initialize")-inits)
	}
	now, err := f.Store.PrincipalBackendSession(t.Context(), owner, time.Hour)
	if err != nil || !strings.HasPrefix(string(now), "mcpgw-sealed-v1.") {
		t.Fatalf("the record after the swap: %q %v", now, err)
	}
}
