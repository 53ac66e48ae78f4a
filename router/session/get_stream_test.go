package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/tests/testsupport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const waitFor = 10 * time.Second

func openStream(t *testing.T, r *router.Router, st store.Store, sid, lastEventID string) *router.SessionEvents {
	t.Helper()
	sess, err := st.LoadSession(context.Background(), sid, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := r.OpenStream(context.Background(), sess, http.Header{}, lastEventID)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	return ev
}

// nextEvent waits for the next live event and decodes its notification.
func nextEvent(t *testing.T, ev *router.SessionEvents) (store.Event, *jsonrpc.Request) {
	t.Helper()
	select {
	case e, ok := <-ev.Live:
		if !ok {
			t.Fatal("live channel closed")
		}
		msg, err := jsonrpc.DecodeMessage(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		return e, msg.(*jsonrpc.Request)
	case <-time.After(waitFor):
		t.Fatal("no event arrived")
	}
	return store.Event{}, nil
}

func uriOf(n *jsonrpc.Request) string {
	var p struct{ URI string }
	_ = json.Unmarshal(n.Params, &p)
	return p.URI
}

// addTool makes a go-sdk backend send notifications/tools/list_changed.
func addTool(f *fixture, backend, name string) {
	f.backends[backend].Server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

func TestStream_SubscriptionUpdatesReachTheStreamOnAnotherInstance(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	holder := f.secondInstance(router.Options{})
	sid := f.initCaps(`{}`)
	one := f.backends["gateway-one"]

	ev := openStream(t, holder, f.store, sid, "")
	defer ev.Close()
	if ev.PrimeID != "0-0" {
		t.Fatalf("prime id %q on an empty log", ev.PrimeID)
	}
	// The holder listens at once (the backend announces list changes)...
	if !one.WaitCount("GET", 1, waitFor) {
		t.Fatal("the stream holder opened no backend listener")
	}
	// ...and after a subscribe on another instance rebuilds its listener,
	// subscribed on its own backend session.
	result(t, f.call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	if !one.WaitCount("GET", 2, waitFor) {
		t.Fatal("the stream holder opened no backend listener")
	}
	result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	_, n := nextEvent(t, ev)
	if n.Method != "notifications/resources/updated" || uriOf(n) != "gateway-one-test://counter" {
		t.Fatalf("got %s %s, want resources/updated for the prefixed URI", n.Method, n.Params)
	}

	// After unsubscribe, an update is no longer forwarded: the next event
	// is the list change that follows it on the same backend stream.
	gets := one.Count("GET")
	result(t, f.call(sid, "resources/unsubscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	if !one.WaitCount("GET", gets+1, waitFor) {
		t.Fatal("listeners were not rebuilt after unsubscribe")
	}
	result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	addTool(f, "gateway-one", "late")
	_, n = nextEvent(t, ev)
	if n.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %s %s after unsubscribe, want tools/list_changed", n.Method, n.Params)
	}
}

// subscribedOnTwo sets up two instances on one store and a session
// subscribed to gateway-one's counter, whose stream the first instance
// holds with its listener up.
func subscribedOnTwo(t *testing.T) (f *fixture, second *router.Router, sid string, ev *router.SessionEvents) {
	t.Helper()
	f = streamingFixture(t, router.Options{})
	second = f.secondInstance(router.Options{})
	sid = f.initCaps(`{}`)
	one := f.backends["gateway-one"]
	result(t, f.call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	gets := one.Count("GET")
	ev = openStream(t, f.router, f.store, sid, "")
	if !one.WaitCount("GET", gets+1, waitFor) {
		t.Fatal("no listener")
	}
	return f, second, sid, ev
}

func TestStream_ResumeOnAnotherInstanceGetsMissedEventsOnceInOrder(t *testing.T) {
	f, second, sid, ev := subscribedOnTwo(t)
	result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	seen, _ := nextEvent(t, ev)
	ev.Close() // the client drops the stream; listeners linger

	for range 3 {
		result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
	}
	// The lingering listener logs all three; only the log can tell.
	if !testsupport.Eventually(t, waitFor, func() bool {
		missed, err := f.store.EventsAfter(t.Context(), sid, seen.ID, 10)
		return err == nil && len(missed) == 3
	}) {
		t.Fatal("the lingering listener did not log the events")
	}
	resumed := openStream(t, second, f.store, sid, seen.ID)
	defer resumed.Close()
	if len(resumed.Replay) != 3 {
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
		moved := openStream(t, second, f.store, sid, "")
		// No wait for the new holder's listener: the update must not fall
		// between the two holders.
		result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
		if _, n := nextEvent(t, moved); n.Method != "notifications/resources/updated" {
			t.Fatalf("round %d: got %s, want the update", round, n.Method)
		}
		moved.Close()
		// And back again, so every round is a takeover.
		back := openStream(t, f.router, f.store, sid, "")
		result(t, f.call(sid, "tools/call", map[string]any{"name": "gateway-one-increment"}))
		if _, n := nextEvent(t, back); n.Method != "notifications/resources/updated" {
			t.Fatalf("round %d back: got %s, want the update", round, n.Method)
		}
		back.Close()
	}
}

func TestStream_SecondStreamOnOneInstanceIsRefused(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	sid := f.initCaps(`{}`)
	ev := openStream(t, f.router, f.store, sid, "")
	defer ev.Close()
	sess, _ := f.store.LoadSession(t.Context(), sid, time.Hour)
	if _, err := f.router.OpenStream(t.Context(), sess, http.Header{}, ""); !errors.Is(err, router.ErrStreamBusy) {
		t.Fatalf("second stream: %v, want ErrStreamBusy", err)
	}
	if _, err := f.router.OpenStream(t.Context(), sess, http.Header{}, "garbage"); err == nil {
		t.Fatal("a malformed Last-Event-ID was accepted")
	}
}

func TestStream_ConfigReloadEmitsListChanged(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	sid := f.initCaps(`{}`)
	ev := openStream(t, f.router, f.store, sid, "")
	defer ev.Close()
	changed := f.router.Reload(map[string]*router.VirtualHost{f.vhost: {Name: f.vhost, Backends: map[string]*router.Backend{
		"gateway-one": {Key: "gateway-one", URL: f.backends["gateway-one"].URL, Timeout: 5 * time.Second},
	}}})
	if len(changed) != 1 || changed[0] != f.vhost {
		t.Fatalf("changed vhosts %v", changed)
	}
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
	tools := names(t, result(t, f.call(sid, "tools/list", nil)), "tools")
	for _, n := range tools {
		if n == "gateway-two-echo" {
			t.Fatalf("removed backend still listed: %v", tools)
		}
	}
}

func TestLogging_LevelSetOnOneInstanceAppliesOnAnother(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	other := f.secondInstance(router.Options{})
	sid := f.initCaps(`{}`)
	s := &recStream{}
	result(t, handle(t, other, f.store, sid, mustID(1), "tools/call", map[string]any{"name": "gateway-one-increment"}, s))
	if len(s.notifications("notifications/message")) != 0 {
		t.Fatal("log message sent before any level was set")
	}
	result(t, f.call(sid, "logging/setLevel", map[string]any{"level": "debug"}))
	s = &recStream{}
	result(t, handle(t, other, f.store, sid, mustID(2), "tools/call", map[string]any{"name": "gateway-one-increment"}, s))
	if len(s.notifications("notifications/message")) != 1 {
		t.Fatalf("log level not applied on the other instance: %+v", s.msgs)
	}
}

func TestStream_DeleteEndsTheStreamAndItsListenersEverywhere(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	holder := f.secondInstance(router.Options{})
	sid := f.initCaps(`{}`)
	one := f.backends["gateway-one"]
	result(t, f.call(sid, "resources/subscribe", map[string]any{"uri": "gateway-one-test://counter"}))
	ev := openStream(t, holder, f.store, sid, "")
	defer ev.Close()
	if !one.WaitCount("GET", 1, waitFor) {
		t.Fatal("no listener")
	}
	deletes := one.Deletes()
	sess, _ := f.store.LoadSession(t.Context(), sid, time.Hour)
	if err := f.router.DeleteSession(t.Context(), sess); err != nil {
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

func TestStream_RouterCloseLeavesNoGoroutines(t *testing.T) {
	f := streamingFixture(t, router.Options{})
	sid := f.initCaps(`{}`)
	result(t, f.call(sid, "tools/list", nil))
	before := runtime.NumGoroutine()

	st, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: f.prefix})
	if err != nil {
		t.Fatal(err)
	}
	r := router.New(map[string]*router.VirtualHost{f.vhost: {Name: f.vhost, Backends: map[string]*router.Backend{
		"gateway-one": {Key: "gateway-one", URL: f.backends["gateway-one"].URL, Timeout: waitFor},
		"gateway-two": {Key: "gateway-two", URL: f.backends["gateway-two"].URL, Timeout: waitFor},
	}}}, router.Options{Store: st})
	ev := openStream(t, r, f.store, sid, "")
	if !f.backends["gateway-one"].WaitCount("GET", 1, waitFor) {
		t.Fatal("no listener")
	}
	result(t, handle(t, r, f.store, sid, mustID(3), "tools/call", map[string]any{"name": "gateway-one-progress",
		"arguments": map[string]any{"steps": 2}, "_meta": map[string]any{"progressToken": 1}}, &recStream{}))
	ev.Close()
	r.Close()
	st.Close()
	<-ev.Ended
	if !testsupport.Eventually(t, waitFor, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}
