package session_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/goleak"
)

func uriOf(n *jsonrpc.Request) string {
	var p struct{ URI string }
	_ = json.Unmarshal(n.Params, &p)
	return p.URI
}

func TestStream_SubscriptionUpdatesReachTheStreamOnAnotherInstance(t *testing.T) {
	f := streamingFixture(t, options{})
	holder := f.NewInstance(options{})
	sid := f.InitCaps(`{}`)
	one := f.Backends["gateway-one"]

	ev := openStream(t, holder, sid, "")
	defer ev.Close()
	if ev.PrimeID != "0-0" {
		t.Fatalf("prime id %q on an empty log", ev.PrimeID)
	}
	// The holder listens at once (the backend announces list changes)...
	up := listenersUp(t, ev)
	if one.Count("GET") < 1 {
		t.Fatal("the stream holder opened no backend listener")
	}
	// ...and after a subscribe on another instance rebuilds its listener,
	// subscribed on its own backend session.
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	up = listenersRebuilt(t, ev, up)
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	_, n := nextEvent(t, ev)
	if n.Method != "notifications/resources/updated" || uriOf(n) != "gateway-one-test://counter" {
		t.Fatalf("got %s %s, want resources/updated for the prefixed URI", n.Method, n.Params)
	}

	// After unsubscribe, an update is no longer forwarded: the next event
	// is the list change that follows it on the same backend stream.
	result(t, f.Call(sid, "resources/unsubscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	listenersRebuilt(t, ev, up)
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	addTool(f, "gateway-one", "late")
	_, n = nextEvent(t, ev)
	if n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s %s after unsubscribe, want tools/list_changed", n.Method, n.Params)
	}
}

// subscribedOnTwo sets up two instances on one store and a session
// subscribed to gateway-one's counter, whose stream the first instance
// holds with its listener up.
func subscribedOnTwo(t *testing.T) (f *fixture, second *instance, sid store.SessionID, ev *session.SessionEvents) {
	t.Helper()
	f = streamingFixture(t, options{})
	second = f.NewInstance(options{})
	sid = f.InitCaps(`{}`)
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	busSettled(t, f.Instance)
	ev = openStream(t, f.Instance, sid, "")
	listenersUp(t, ev)
	return f, second, sid, ev
}

func TestStream_ResumeOnAnotherInstanceGetsMissedEventsOnceInOrder(t *testing.T) {
	f, second, sid, ev := subscribedOnTwo(t)
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	seen, _ := nextEvent(t, ev)
	ev.Close() // the client drops the stream; listeners linger

	for range 3 {
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	}
	// The lingering listener logs all three; only the log can tell.
	if !testsupport.Eventually(t, waitFor, func() bool {
		missed, err := f.Store.EventsAfter(t.Context(), sid, seen.ID, 10)
		return err == nil && len(missed) == 3
	}) {
		t.Fatal("the lingering listener did not log the events")
	}
	resumed := openStream(t, second, sid, seen.ID)
	defer resumed.Close()
	if len(resumed.Replay) != 3 {
		for _, e := range resumed.Replay {
			t.Logf("replayed %s: %s", e.ID, e.Data)
		}
		t.Fatalf("replayed %d events, want the 3 missed", len(resumed.Replay))
	}
	for i := 1; i < len(resumed.Replay); i++ {
		if !store.EventIDAfter(resumed.Replay[i].ID, resumed.Replay[i-1].ID) {
			t.Fatal("replay out of order")
		}
	}
	if resumed.PrimeID != resumed.Replay[2].ID {
		t.Fatalf("prime id %q, want the last replayed id", resumed.PrimeID)
	}
	// The first instance gave the stream up when the second took it.
	select {
	case <-ev.Ended:
	case <-time.After(waitFor):
		t.Fatal("the old holder did not end its hold after the takeover")
	}
}

// A takeover is make-before-break: an update sent right after the client
// reattaches elsewhere, before the new holder's listeners are up, reaches
// the client through the old holder's log entry.
func TestStream_TakeoverLosesNoUpdate(t *testing.T) {
	f, second, sid, first := subscribedOnTwo(t)
	first.Close()
	for round := range 5 {
		moved := openStream(t, second, sid, "")
		// No wait for the new holder's listener: the update must not fall
		// between the two holders.
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
		if _, n := nextEvent(t, moved); n.Method != "notifications/resources/updated" {
			t.Fatalf("round %d: got %s, want the update", round, n.Method)
		}
		moved.Close()
		// And back again, so every round is a takeover.
		back := openStream(t, f.Instance, sid, "")
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
		if _, n := nextEvent(t, back); n.Method != "notifications/resources/updated" {
			t.Fatalf("round %d back: got %s, want the update", round, n.Method)
		}
		back.Close()
	}
}

func TestStream_SecondStreamOnOneInstanceIsRefused(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(`{}`)
	ev := openStream(t, f.Instance, sid, "")
	defer ev.Close()
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if _, err := f.Sessions.OpenStream(t.Context(), sess, http.Header{}, ""); !errors.Is(err, session.ErrStreamBusy) {
		t.Fatalf("second stream: %v, want ErrStreamBusy", err)
	}
	if _, err := f.Sessions.OpenStream(t.Context(), sess, http.Header{}, "garbage"); err == nil {
		t.Fatal("a malformed Last-Event-ID was accepted")
	}
}

func TestStream_ConfigReloadEmitsListChanged(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(`{}`)
	ev := openStream(t, f.Instance, sid, "")
	defer ev.Close()
	changed := f.Router.Reload(map[string]*router.VirtualHost{f.VHost: {Name: f.VHost, Backends: map[string]*router.Backend{
		"gateway-one": {Config: upstream.Config{Key: "gateway-one", URL: f.Backends["gateway-one"].URL, Timeout: 5 * time.Second}},
	}}})
	if len(changed) != 1 || changed[0] != f.VHost {
		t.Fatalf("changed vhosts %v", changed)
	}
	f.Sessions.VHostsChanged(changed)
	var got []string
	for range 3 {
		_, n := nextEvent(t, ev)
		got = append(got, n.Method)
	}
	want := []string{"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	// The new backend set is in force.
	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	for _, n := range tools {
		if n == "gateway-two-echo" {
			t.Fatalf("removed backend still listed: %v", tools)
		}
	}
}

func TestLogging_LevelSetOnOneInstanceAppliesOnAnother(t *testing.T) {
	f := streamingFixture(t, options{})
	other := f.NewInstance(options{})
	sid := f.InitCaps(`{}`)
	s := &recStream{}
	result(t, handle(t, other, sid, mustID(1), "tools/call", map[string]any{"name": "gateway-one-increment"}, s))
	if len(s.notifications("notifications/message")) != 0 {
		t.Fatal("log message sent before any level was set")
	}
	result(t, f.Call(sid, "logging/setLevel", map[string]any{"level": "debug"}))
	s = &recStream{}
	result(t, handle(t, other, sid, mustID(2), "tools/call", map[string]any{"name": "gateway-one-increment"}, s))
	if len(s.notifications("notifications/message")) != 1 {
		t.Fatalf("log level not applied on the other instance: %+v", s.msgs)
	}
}

func TestStream_DeleteEndsTheStreamAndItsListenersEverywhere(t *testing.T) {
	f := streamingFixture(t, options{})
	holder := f.NewInstance(options{})
	sid := f.InitCaps(`{}`)
	one := f.Backends["gateway-one"]
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	busSettled(t, holder)
	ev := openStream(t, holder, sid, "")
	defer ev.Close()
	listenersUp(t, ev)
	deletes := one.Deletes()
	sess, _ := f.Store.LoadSession(t.Context(), sid, time.Hour)
	if err := f.Sessions.DeleteSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ev.Ended:
	case <-time.After(waitFor):
		t.Fatal("the stream on the other instance outlived its session")
	}
	// The listener's backend session was ended too: no subscription lingers.
	if !testsupport.Eventually(t, waitFor, func() bool { return one.Deletes() > deletes }) {
		t.Fatal("the listener's backend session was not deleted")
	}
}

// An instance's Close ends its streams and waits for every goroutine they
// started: listeners, run loops, renewers, goroutines spawned for the bus.
func TestStream_CloseLeavesNoGoroutines(t *testing.T) {
	f := streamingFixture(t, options{})
	sid := f.InitCaps(`{}`)
	result(t, f.Call(sid, "tools/list", nil))
	// goleak names the leaked goroutine's stack, and waits for ones on
	// their way out.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	st, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: f.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	// Per-request backend sessions, as the fixture's: a backend session
	// kept open would be the backend's goroutine, not the instance's.
	vhosts := map[string]*router.VirtualHost{f.VHost: {Name: f.VHost, Backends: map[string]*router.Backend{
		"gateway-one": {Config: upstream.Config{Key: "gateway-one", URL: f.Backends["gateway-one"].URL, Timeout: waitFor}, Session: router.SessionPerRequest},
		"gateway-two": {Config: upstream.Config{Key: "gateway-two", URL: f.Backends["gateway-two"].URL, Timeout: waitFor}, Session: router.SessionPerRequest},
	}}}
	in := &instance{Store: st, Router: router.New(vhosts, router.Options{Store: st})}
	in.Sessions = session.New(st, in.Router, session.Options{})
	if err := in.Router.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := in.Sessions.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ev := openStream(t, in, sid, "")
	listenersUp(t, ev)
	result(t, handle(t, in, sid, mustID(3), "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": map[string]any{"steps": 2}, "_meta": map[string]any{"progressToken": 1}}, &recStream{}))
	ev.Close()
	in.Sessions.Close()
	in.Router.Close()
	st.Close()
	<-ev.Ended
}

// A list_changed seen by the instance holding a session's stream drops the
// backend's cached list pages on every instance, well before their TTL.
func TestStream_ListChangedDropsCachedPagesOnEveryInstance(t *testing.T) {
	cached := func(b *router.Backend) { b.ListCacheTTL = time.Hour }
	f := routertest.New(t, redisSrv.URL(), options{},
		routertest.Spec{Key: "gateway-one", Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: cached},
		routertest.Spec{Key: "gateway-two", Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: cached})
	other := f.NewInstance(options{})
	sid := f.InitCaps(`{}`)

	tools := func() []string {
		return names(t, result(t, other.Call(t, sid, mustID(7), nil, "tools/list", nil, nil)), "tools")
	}
	if slices.Contains(tools(), "gateway-one-late") {
		t.Fatal("tool present before it was added")
	}
	ev := openStream(t, f.Instance, sid, "")
	defer ev.Close()
	listenersUp(t, ev)
	addTool(f, "gateway-one", "late")
	if _, n := nextEvent(t, ev); n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s, want the list change", n.Method)
	}
	if !testsupport.Eventually(t, waitFor, func() bool { return slices.Contains(tools(), "gateway-one-late") }) {
		t.Fatal("the other instance kept serving its cached page after list_changed")
	}
}

// A change of the session's subscriptions rebuilds its listeners
// make-before-break: an update of a resource subscribed before, sent while
// the new listeners come up, still reaches the client (the old ones listen
// until the new ones are up).
func TestStream_ListenerRebuildLosesNoUpdate(t *testing.T) {
	f, _, sid, ev := subscribedOnTwo(t)
	defer ev.Close()
	uris := []string{"gateway-two-test://counter", "gateway-one-test://counter"}
	for round := range 6 {
		// Subscribe or unsubscribe gateway-two's counter: the listeners are
		// rebuilt; gateway-one's counter stays subscribed throughout.
		method := "resources/subscribe"
		if round%2 == 1 {
			method = "resources/unsubscribe"
		}
		result(t, f.Call(sid, method, map[string]any{"uri": uris[0]}))
		result(t, f.Call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
		for {
			_, n := nextEvent(t, ev)
			if n.Method == "notifications/resources/updated" && strings.Contains(string(n.Params), uris[1]) {
				break
			}
		}
	}
}
